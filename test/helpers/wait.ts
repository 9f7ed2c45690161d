/**
 * Bounded waiting on something the running worker will make true (a send completed, a
 * message received): polls `check` until it returns a truthy value, and fails naming what it
 * waited for — and what it saw last — instead of hanging until jest's timeout.
 */
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Appended to the timeout message: the state seen last. */
  describe?: () => Promise<unknown> | unknown;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Every bound on waiting is multiplied by TEST_PATIENCE (default 3; jest.config.js scales its
 * test timeout the same way). A bound says "this will happen, give up if it never does", not
 * how fast it must happen: on a loaded machine (a benchmark beside the suite) the same work
 * takes several times longer, and a test must not fail for that.
 */
export const PATIENCE = Math.max(1, Number(process.env.TEST_PATIENCE ?? 3));
export const patient = (ms: number) => ms * PATIENCE;

export async function waitFor<T>(what: string, check: () => Promise<T> | T, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = patient(opts.timeoutMs ?? 30_000);
  const started = Date.now();
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() - started > timeoutMs) {
      const seen = opts.describe ? `; last seen: ${JSON.stringify(await opts.describe())}` : '';
      const err = lastError ? `; last error: ${(lastError as Error).message ?? String(lastError)}` : '';
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${seen}${err}`);
    }
    await sleep(opts.intervalMs ?? 25);
  }
}
