import type { Knex } from 'knex';

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

/**
 * SEND_RATE_SCOPE=global: one token bucket in PostgreSQL (`send_budget`) shared by every
 * worker process. A worker takes up to a tenth of a second's worth of tokens at a time (one
 * row update), so the total rate holds across processes without a round trip per message.
 */
export class GlobalThrottle {
  private local = 0;

  constructor(
    private readonly db: Knex,
    private readonly rate: number,
  ) {}

  async take(): Promise<void> {
    if (this.rate <= 0) return;
    while (this.local < 1) {
      this.local += await this.grant(Math.max(1, Math.floor(this.rate / 10)));
      if (this.local < 1) await new Promise((r) => setTimeout(r, Math.max(5, Math.ceil(1000 / this.rate))));
    }
    this.local -= 1;
  }

  private async grant(want: number): Promise<number> {
    const result = await this.db.raw(
      `WITH cur AS (
         SELECT least(?::float8, tokens + ?::float8 * extract(epoch FROM clock_timestamp() - refilled_at)) AS avail
         FROM send_budget WHERE scope = 'global' FOR UPDATE
       )
       UPDATE send_budget b SET tokens = cur.avail - least(?, floor(cur.avail)), refilled_at = clock_timestamp()
       FROM cur WHERE b.scope = 'global'
       RETURNING least(?, floor(cur.avail))::int AS granted`,
      [this.rate, this.rate, want, want],
    );
    if (result.rows.length === 0) {
      await this.db.raw(`INSERT INTO send_budget (scope, tokens, refilled_at) VALUES ('global', 0, clock_timestamp()) ON CONFLICT DO NOTHING`);
      return 0;
    }
    return Math.max(0, Number(result.rows[0].granted));
  }
}
