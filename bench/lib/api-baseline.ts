/**
 * The API benchmark's baseline, in a child process of its own like Herald: bare express and
 * pg, nothing else. One GET route per measured endpoint runs the very SQL Herald runs for it
 * (compiled from Herald's own query builders by bench/api.ts) with a pg.Pool of Herald's
 * DB_POOL_MAX, and answers the rows as JSON in the same envelope. The key pair picks the
 * account from a table handed over at start (a Map lookup, no database): the bare endpoint
 * does no authentication, so what it measures is the query and the framework.
 *
 * Parameters come as a JSON file named by BENCH_API_BASELINE; `{ type: 'ready' }` goes back
 * over IPC once it listens.
 */
import fs from 'node:fs';
import express from 'express';
import pg from 'pg';

export const USER_ID = '$user_id';

export interface BaselineRoute {
  /** The list key of the envelope (`contactTypes`, `contacts`). */
  key: string;
  sql: string;
  /** Set: run as a named prepared statement, as Herald does (bench/api.ts --bare-prepared). */
  name?: string;
  /** Bindings in order; USER_ID stands for the requesting account's id. */
  bindings: unknown[];
}

export interface BaselineParams {
  port: number;
  databaseUrl: string;
  poolMax: number;
  /** PublicKey → account id. */
  accounts: Record<string, number>;
  routes: Record<string, BaselineRoute>;
}

function main(p: BaselineParams): void {
  const pool = new pg.Pool({ connectionString: p.databaseUrl, max: p.poolMax });
  const app = express();
  for (const [path, r] of Object.entries(p.routes)) {
    app.get(path, async (req, res) => {
      const userId = p.accounts[req.get('PublicKey') ?? ''];
      if (userId === undefined) {
        res.status(401).json({ status: 'failed', errors: 'unknown key' });
        return;
      }
      const { rows } = await pool.query({ name: r.name, text: r.sql, values: r.bindings.map((b) => (b === USER_ID ? userId : b)) });
      res.json({ status: 'success', message: { [r.key]: rows } });
    });
  }
  const server = app.listen(p.port, '127.0.0.1', () => process.send!({ type: 'ready' }));
  process.on('SIGTERM', () => {
    server.close();
    void pool.end().then(() => process.exit(0));
  });
}

if (require.main === module) {
  main(JSON.parse(fs.readFileSync(process.env.BENCH_API_BASELINE!, 'utf8')) as BaselineParams);
}
