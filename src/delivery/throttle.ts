/**
 * SEND_RATE as a token bucket: at most `rate` messages per second from this process, with a
 * burst of one second's worth. `rate` 0 means unlimited.
 */
export class Throttle {
  private tokens: number;
  private last = Date.now();

  constructor(private readonly rate: number) {
    this.tokens = rate;
  }

  /** Resolves when one message may go. */
  async take(): Promise<void> {
    if (this.rate <= 0) return;
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.rate, this.tokens + ((now - this.last) / 1000) * this.rate);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await new Promise((r) => setTimeout(r, Math.ceil(((1 - this.tokens) / this.rate) * 1000)));
    }
  }
}
