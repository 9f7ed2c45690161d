/**
 * Measured figures of the fault tests (they go into docs/operations.md). Printed when
 * HERALD_FAULT_FIGURES=1, so an ordinary run stays quiet.
 */
const figures: Record<string, unknown> = {};

export function figure(name: string, value: unknown): void {
  figures[name] = value;
}

export function printFigures(title: string): void {
  if (process.env.HERALD_FAULT_FIGURES !== '1' || Object.keys(figures).length === 0) return;
  process.stdout.write(`\n${title}\n${JSON.stringify(figures, null, 2)}\n`);
}
