/**
 * Bounce processing benchmark (issue "Deliverability"): 10,000 RFC 3464 DSNs, each to the VERP
 * address of one message Herald sent, delivered over SMTP to `herald serve`'s inbound port
 * (INBOUND_SMTP_PORT, the worker off) by --connections parallel connections, as a busy remote
 * MTA would. The clock runs from the first MAIL FROM to the last 250: Herald answers each
 * message only after it was parsed, matched and applied (event, statistics, suppression, kept
 * report), so the last answer means all were processed; the script then checks that every
 * DSN became one suppression and one `bounced` event. Target: ≤ 30 s (median of the runs).
 *
 *   npx tsx bench/bounces.ts [--count 10000] [--connections 10] [--runs 3] [--no-build]
 *
 * The recipient rows are written straight into the database (10,000 `sent` deliveries of one
 * single send) and their tokens signed with the installation's secret, as the worker would have.
 * Baseline, in the same run: the same DSNs through the same client to a bare smtp-server that
 * only reads them (the transport's own cost). Prints a summary, writes bench/out/bounces.json,
 * exits non-zero on FAIL. Figures: bench/README.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { recipientToken } from '../src/recipient-token';
import { verpAddress } from '../src/bounces/verp';
import { freePort } from '../test/helpers/net';
import { dsn, remoteMta } from '../test/helpers/reports';
import { startSmtpSink } from '../test/helpers/smtp';
import { build, createAccount, log, startHerald } from './lib/herald';
import { connect, databaseUrl, dropDatabase, recreateDatabase } from './lib/pg';
import { bestMedian, seconds, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';

const TARGET_S = 30;
const BOUNCE_DOMAIN = 'bounces.bench.test';
const opts = args();
const COUNT = Math.max(1, Number(opts.get('count') ?? 10_000));
const CONNECTIONS = Math.max(1, Number(opts.get('connections') ?? 10));
const RUNS = Math.max(1, Number(opts.get('runs') ?? 3));
const DB = 'herald_bench_bounces';

/** Delivers every message through one pooled client; resolves with the wall time in ms. */
async function deliverAll(port: number, messages: Array<{ to: string; raw: string }>): Promise<number> {
  const mta = remoteMta(port, { poolSize: CONNECTIONS });
  try {
    const t0 = Date.now();
    await Promise.all(messages.map((m) => mta.deliver(m.to, m.raw)));
    return Date.now() - t0;
  } finally {
    mta.close();
  }
}

/** A fresh database, Herald with its inbound port, COUNT sent recipient rows, and their DSNs. */
async function prepare(dataDir: string) {
  const url = await recreateDatabase(DB);
  const inboundPort = await freePort();
  const herald = await startHerald({
    databaseUrl: url,
    dataDir,
    env: { BOUNCE_DOMAIN, INBOUND_SMTP_PORT: String(inboundPort), INBOUND_HOST: '127.0.0.1', INBOUND_MAX_CLIENTS: String(CONNECTIONS * 2) },
  });
  const account = await createAccount(url, 'Bounces');
  const c = await connect(databaseUrl(DB));
  try {
    const { rows: senders } = await c.query(
      `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, is_verified, utr)
       SELECT $1, 'Bench', 'news@bench.test', 'reply@bench.test', (SELECT id FROM countries ORDER BY id LIMIT 1), '1 Street', 'bench', 1, 'b0b0b0b0b0b0b0b0'
       RETURNING id`,
      [account.id],
    );
    const { rows: groups } = await c.query(
      `INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display) VALUES ($1, '1234567890', 'News', 'News', 1) RETURNING id`,
      [account.id],
    );
    const { rows: sends } = await c.query(
      `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, from_sender, reply_to, status, schedule_type)
       VALUES ($1, gen_random_uuid(), 1, $2, $3, 'Bench', 'News', 'News', 'news@bench.test', 'reply@bench.test', 0, 0) RETURNING id`,
      [account.id, senders[0].id, groups[0].id],
    );
    const { rows } = await c.query<{ id: string; email: string }>(
      `INSERT INTO deliveries (user_id, single_send_id, email, status, attempts, sent_at)
       SELECT $1, $2, 'r' || n || '@example.com', 'sent', 1, now() FROM generate_series(1, $3) AS n
       RETURNING id, email`,
      [account.id, sends[0].id, COUNT],
    );
    // The installation's secret, as the first process that needs it would make it (src/db/secrets.ts).
    await c.query(`INSERT INTO herald_secrets (name, value) VALUES ('tracking', decode(md5(random()::text) || md5(random()::text), 'hex')) ON CONFLICT (name) DO NOTHING`);
    const key = (await c.query<{ value: Buffer }>(`SELECT value FROM herald_secrets WHERE name = 'tracking'`)).rows[0].value;
    const messages = rows.map((r) => {
      const token = recipientToken(key, { deliveryId: Number(r.id), userId: account.id });
      const to = verpAddress(BOUNCE_DOMAIN, token);
      return { to, raw: dsn({ to, recipient: r.email, originalHeaders: `Message-ID: <${token}@bench.test>\r\nTo: ${r.email}\r\nSubject: News` }) };
    });
    return { herald, inboundPort, messages, userId: account.id };
  } finally {
    await c.end();
  }
}

async function counts(userId: number): Promise<{ suppressions: number; bounced: number; reports: number }> {
  const c = await connect(databaseUrl(DB));
  try {
    const q = async (sql: string) => Number((await c.query(sql, [userId])).rows[0].n);
    return {
      suppressions: await q(`SELECT count(*) AS n FROM suppressions WHERE user_id = $1 AND source = 'dsn'`),
      bounced: await q(`SELECT count(*) AS n FROM events WHERE user_id = $1 AND type = 'bounced'`),
      reports: await q(`SELECT count(*) AS n FROM bounce_reports WHERE user_id = $1 AND raw IS NOT NULL`),
    };
  } finally {
    await c.end();
  }
}

async function main(): Promise<number> {
  if (!opts.has('no-build')) build();
  const herald: number[] = [];
  const baseline: number[] = [];
  const checks: Array<Awaited<ReturnType<typeof counts>>> = [];
  for (let run = 1; run <= RUNS; run += 1) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bounces-'));
    const { herald: server, inboundPort, messages, userId } = await prepare(dir);
    try {
      const sink = await startSmtpSink();
      try {
        await waitForQuiet();
        baseline.push(await deliverAll(sink.port, messages));
      } finally {
        await sink.close();
      }
      await waitForQuiet();
      const ms = await deliverAll(inboundPort, messages);
      herald.push(ms);
      const seen = await counts(userId);
      checks.push(seen);
      log(`run ${run}: ${COUNT} DSNs in ${seconds(ms)} s (${Math.round(COUNT / (ms / 1000))}/s); bare smtp-server ${seconds(baseline[baseline.length - 1])} s; ${JSON.stringify(seen)}`);
    } finally {
      await server.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  await dropDatabase(DB);
  const h = bestMedian(herald);
  const b = bestMedian(baseline);
  const complete = checks.every((c) => c.suppressions === COUNT && c.bounced === COUNT && c.reports === COUNT);
  const pass = complete && h.median / 1000 <= TARGET_S;
  process.stdout.write(
    [
      '',
      `${COUNT} DSNs through the inbound SMTP port, ${CONNECTIONS} connections, ${RUNS} runs (best / median), target ≤ ${TARGET_S} s`,
      `  Herald            ${seconds(h.best)} / ${seconds(h.median)} s   (${Math.round(COUNT / (h.median / 1000))} DSN/s median)`,
      `  bare smtp-server  ${seconds(b.best)} / ${seconds(b.median)} s`,
      `  every DSN applied (suppression, event, kept report): ${complete ? 'yes' : 'NO'}`,
      `  ${pass ? 'PASS' : 'FAIL'}`,
      '',
    ].join('\n') + '\n',
  );
  const file = writeResult('bounces', {
    when: new Date().toISOString(),
    pass,
    targetS: TARGET_S,
    count: COUNT,
    connections: CONNECTIONS,
    machine: { cpus: os.cpus().length, node: process.version },
    heraldMs: h,
    baselineMs: b,
    checks,
  });
  log(`wrote ${path.relative(process.cwd(), file)}`);
  return pass ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`${(err as Error).stack ?? err}\n`);
    process.exit(1);
  },
);
