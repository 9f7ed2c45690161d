/**
 * Bounded waiting for the fault tests: every wait has a deadline and says what it was
 * waiting for, so a regression fails with a message instead of hanging until jest's timeout.
 */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Appended to the timeout message: what state we last saw. */
  describe?: () => Promise<string> | string;
}

/** Polls `check` until it returns a truthy value; throws after `timeoutMs` naming `what`. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, opts: WaitOptions): Promise<NonNullable<T>> {
  const started = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() - started > opts.timeoutMs) {
      const seen = opts.describe ? `; last seen: ${await opts.describe()}` : '';
      const err = lastError ? `; last error: ${(lastError as Error).message ?? String(lastError)}` : '';
      throw new Error(`Timed out after ${opts.timeoutMs} ms waiting for ${what}${seen}${err}`);
    }
    await sleep(opts.intervalMs ?? 50);
  }
}
