/**
 * What the send's guarantees cost per message, without SMTP (issue 33: "where a target cannot be
 * met without giving up a guarantee, say which guarantee costs what, measured").
 *
 * bench:send compares Herald with the minimal signed sender, which keeps no record of what it
 * sent. Herald's sender claims every row before it sends it (crash-safe: a lease, FOR UPDATE SKIP
 * LOCKED) and records its outcome, its event and the statistics it makes in one transaction (one
 * row and one event per message). This script prices those steps on their own: `rows` queued rows
 * of one send are claimed in batches of 100 (SEND_BATCH_SIZE / 2, as the sender claims) and then
 *
 *   claim     nothing more (the rows stay `sending`): the claim alone;
 *   outcome   the outcome written to each row (RECORD_OUTCOMES_SQL), no event, no statistics;
 *   full      recordOutcomes, as the sender calls it: outcome, `delivered` event, statistics.
 *
 * The modes alternate (claim, outcome, full, then the same again, `--rounds` times), on one
 * connection, so the PostgreSQL backend's CPU (from /proc, utime + stime) is the statements'
 * own. Prints, per mode, the median over rounds of PostgreSQL's and Node's CPU per message (µs)
 * and the wall time per message of the loop run alone (no overlap with sending, as there is in
 * the sender). Differences between modes are the price of each step. No target: a measurement.
 *
 *   npx tsx bench/bookkeeping.ts [--rows 20000] [--rounds 3] [--keep]
 */
import fs from 'node:fs';
import knexLib from 'knex';
import { log, runMain } from './lib/herald';
import { median, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { withSendBench } from './lib/send-bench';
import { makeList } from './lib/send-fixture';
import { claimBatch, outcomeValues, recordOutcomes, RECORD_OUTCOMES_SQL, type ClaimedRow, type SendOutcome } from '../src/deliveries/queue';
import { DeliveryStatus } from '../src/states';

const opts = args();
const ROWS = Number(opts.get('rows') ?? 20_000);
const ROUNDS = Math.max(1, Number(opts.get('rounds') ?? 3));
const BATCH = 100;
const LEASE_MS = 60_000;
const MODES = ['claim', 'outcome', 'full'] as const;
type Mode = (typeof MODES)[number];

/** CPU milliseconds of a process so far (utime + stime; USER_HZ 100). */
function procCpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const nodeCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** The outcome alone, as recordOutcomes writes it (the same records), without its event and statistics. */
async function outcomeOnly(db: knexLib.Knex, rows: ClaimedRow[], outcomes: SendOutcome[]): Promise<void> {
  await db.raw(RECORD_OUTCOMES_SQL(rows), [JSON.stringify(outcomeValues(rows, outcomes))]);
}

async function main() {
  await withSendBench({ db: 'herald_bench_bookkeeping', account: 'Bench bookkeeping', pin: false, keep: opts.has('keep'), build: false }, async ({ url, admin, c, f }) => {
    const typeId = await makeList(c, f, 'Bench bookkeeping', 'bk-', ROWS);
    const db = knexLib({ client: 'pg', connection: url, pool: { min: 1, max: 1 } });
    try {
      const pid = Number((await db.raw('SELECT pg_backend_pid() AS pid')).rows[0].pid);
      const runs: Record<Mode, Array<{ pgUs: number; nodeUs: number; wallUs: number }>> = { claim: [], outcome: [], full: [] };
      for (let r = 1; r <= ROUNDS; r += 1) {
        for (const mode of MODES) {
          await admin.query('TRUNCATE deliveries');
          await admin.query('DELETE FROM events');
          const send = await admin.query<{ id: number }>(
            `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, from_sender, reply_to, status)
             VALUES ($1, gen_random_uuid(), 2, $2, $3, 'bookkeeping', 's', 'p', 'news@bench-news.test', 'reply@bench-news.test', 1) RETURNING id`,
            [f.userId, f.senderId, f.groupId],
          );
          await admin.query(
            `INSERT INTO deliveries (user_id, single_send_id, contact_id, email, status, next_attempt_at)
             SELECT $1, $2, c.id, c.email, 'queued', now() - interval '1 hour' FROM contacts c WHERE c.user_id = $1 AND c.contact_type_id = $3`,
            [f.userId, send.rows[0].id, typeId],
          );
          await admin.query('VACUUM ANALYZE deliveries');
          const pg0 = procCpuMs(pid);
          const node0 = nodeCpuMs();
          const t0 = process.hrtime.bigint();
          let done = 0;
          for (;;) {
            const rows = await claimBatch(db, BATCH, LEASE_MS, undefined, false);
            if (rows.length === 0) break;
            done += rows.length;
            const outcomes: SendOutcome[] = rows.map((row) => ({ status: DeliveryStatus.Sent, messageId: `<${row.id}@bench-news.test>` }));
            if (mode === 'outcome') await outcomeOnly(db, rows, outcomes);
            if (mode === 'full') await recordOutcomes(db, rows, outcomes);
          }
          if (done !== ROWS) throw new Error(`${mode}: claimed ${done} of ${ROWS} rows`);
          const run = {
            pgUs: Math.round(((procCpuMs(pid) - pg0) / done) * 1000 * 10) / 10,
            nodeUs: Math.round(((nodeCpuMs() - node0) / done) * 1000 * 10) / 10,
            wallUs: Math.round((Number(process.hrtime.bigint() - t0) / 1e3 / done) * 10) / 10,
          };
          runs[mode].push(run);
          log(`round ${r}/${ROUNDS} ${mode.padEnd(7)} PostgreSQL ${run.pgUs} µs/msg, Node ${run.nodeUs} µs/msg, wall ${run.wallUs} µs/msg`);
        }
      }
      const summary = Object.fromEntries(
        MODES.map((m) => [m, { pgUs: median(runs[m].map((x) => x.pgUs)), nodeUs: median(runs[m].map((x) => x.nodeUs)), wallUs: median(runs[m].map((x) => x.wallUs)) }]),
      ) as Record<Mode, { pgUs: number; nodeUs: number; wallUs: number }>;
      const file = writeResult('bookkeeping', { benchmark: 'bookkeeping', when: new Date().toISOString(), rows: ROWS, rounds: ROUNDS, batch: BATCH, summary, runs });
      const price = (name: string, a: Mode | null, b: Mode) =>
        `  ${name.padEnd(34)} PostgreSQL ${(summary[b].pgUs - (a ? summary[a].pgUs : 0)).toFixed(1)} µs, Node ${(summary[b].nodeUs - (a ? summary[a].nodeUs : 0)).toFixed(1)} µs`;
      process.stdout.write(
        [
          '',
          `Bookkeeping per message — ${ROWS.toLocaleString('en')} rows, batches of ${BATCH}, medians of ${ROUNDS} alternated rounds (CPU per message)`,
          price('claim (lease, FOR UPDATE SKIP LOCKED)', null, 'claim'),
          price('outcome row', 'claim', 'outcome'),
          price('event + statistics', 'outcome', 'full'),
          price('all of it', null, 'full'),
          `  wrote ${file}`,
          '',
        ].join('\n'),
      );
    } finally {
      await db.destroy();
    }
  });
}

runMain(main);
