/**
 * A/B test benchmark (issue 19): an A/B send of 1,000,000 recipients (a subject test, 2
 * variations, 20 % in the test) against an ordinary send of the same audience, through Herald as
 * `npm start` runs it (one `herald serve` process, API and worker, default settings), into an
 * SMTP sink that accepts and discards. Measured in one run:
 *
 *   - release: the decision's transaction releasing the 800,000 held rows to the winner (Herald
 *     logs its time) — target ≤ 5 s; and the same seen from outside: from the moment the decision
 *     is due to the test read as decided, and to the winner's first message at the sink — also
 *     ≤ 5 s for a PASS. The decision writes no recipient row (the worker's claim takes the held
 *     rows to the winner as it sends them, src/delivery/queue.ts), so the cost of the release is
 *     in the winner phase's sending rate, which the next figure covers;
 *   - the sending rate: messages over the time the sink was receiving them (first to last
 *     message; for the A/B send the test phase and the winner phase added, the wait between them
 *     left out) — target ≥ 95 % of the ordinary send's, measured the same way in the same run;
 *   - `GET /single/send/stats` of the A/B send (with `ab`) once its 1,000,000 recipients' events
 *     are recorded: 30 calls over HTTP — target median ≤ 200 ms.
 *
 * The test's duration is a minute at least; once the test group has left the queue the decision
 * is made due at once (the wait is not what is measured).
 *
 * The sends run in the order `--order` gives (default `o,ab,o`: an ordinary send, the A/B send, an
 * ordinary send again), each against the same audience with the queue emptied between them; the
 * A/B send's rate is compared with the mean of the ordinary sends' rates, so a machine that speeds
 * up or slows down over the run (a 1,000,000-recipient send takes ~20 minutes) moves both sides.
 * CPU per message (Herald's process, the whole PostgreSQL server) is read from each phase's first
 * message to its last.
 *
 *   npx tsx bench/ab.ts [--recipients 1000000] [--order o,ab,o] [--no-build] [--keep] [--no-pin] [--cpu-prof] [--herald-node-args '…']
 *
 * Writes bench/out/ab.json, exits 1 on FAIL or a failed check.
 */
import path from 'node:path';
import type { Client } from 'pg';
import { checksLine, client, finishRun, log, ROOT, runMain } from './lib/herald';
import { serverInfo } from './lib/pg';
import { cpuMeter, median, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { machineInfo, withSendBench } from './lib/send-bench';
import { makeList, type Fixture } from './lib/send-fixture';
import { createSend, sendRow, startServe, type Serve } from './lib/send-herald';
import { ask, type Child } from './lib/send-procs';
import type { SinkStats } from './lib/send-sink';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);

const DB = 'herald_bench_ab';
const RECIPIENTS = num('recipients', 1_000_000);
const TEST_PERCENTAGE = 20;
const PIN = !opts.has('no-pin');
const ORDER = (String(opts.get('order') ?? (opts.has('ab-first') ? 'ab,o' : 'o,ab,o'))).split(',');
if (ORDER.filter((x) => x === 'ab').length !== 1 || !ORDER.includes('o') || ORDER.some((x) => x !== 'o' && x !== 'ab')) {
  throw new Error(`--order: a comma list of o (an ordinary send) and ab (the A/B send, once), with at least one o: ${ORDER.join(',')}`);
}
const TARGET = { releaseMs: 5_000, rateRatio: 0.95, statsMs: 200 };
const PUBLIC_URL = 'https://herald.bench.test';
/** --cpu-prof: V8 CPU profiles of each send's Herald, in bench/out/prof/ab/<ordinary|ab>/; --herald-node-args: more of Node's options for Herald. */
const profileArgs = (name: string) => [
  ...(opts.has('cpu-prof') ? ['--cpu-prof', '--cpu-prof-dir', path.join(ROOT, 'bench', 'out', 'prof', 'ab', name)] : []),
  // --herald-node-args '--max-semi-space-size=64 …': Node's options for both sends' Herald (diagnostics; say so with the figures).
  ...(typeof opts.get('herald-node-args') === 'string' ? String(opts.get('herald-node-args')).split(/\s+/).filter(Boolean) : []),
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** Polls the send until `done` says so (an hour at most), logging progress. */
async function waitUntil(c: Client, herald: Serve, utr: string, what: string, done: (row: Awaited<ReturnType<typeof sendRow>>) => Promise<boolean> | boolean) {
  const deadline = Date.now() + 3_600_000;
  let lastLog = Date.now();
  for (;;) {
    const row = await sendRow(c, utr);
    if (await done(row)) return row;
    if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
    if (Date.now() > deadline) throw new Error(`${what}: not within an hour (${JSON.stringify(row)})`);
    if (Date.now() - lastLog > 30_000) {
      lastLog = Date.now();
      log(`  ${what}: delivered ${row.delivered.toLocaleString('en')}`);
    }
    await sleep(100);
  }
}

/** CPU seconds of a phase, and per message in ms (Herald's process; the PostgreSQL server's, autovacuum included). */
const perMessage = (cpu: { heraldS: number; postgresS: number }, messages: number) => ({
  ...cpu,
  heraldMsPerMessage: round((cpu.heraldS * 1000) / Math.max(1, messages), 3),
  postgresMsPerMessage: round((cpu.postgresS * 1000) / Math.max(1, messages), 3),
});

/**
 * A CPU meter started when the sink receives its next message (the phase's first), polled every
 * 20 ms. Nothing else may ask the sink meanwhile: its answers are matched by type, so two
 * questions in flight at once leave every later answer one behind.
 */
async function meterFromFirstMessage(sink: Child, pid: number) {
  for (;;) {
    const st = await ask<SinkStats>(sink, { type: 'stats' });
    if (st.firstAt !== null) return cpuMeter(pid);
    await sleep(20);
  }
}

/** Messages per second over the sink's first to last message of a phase. */
const rateOf = (s: SinkStats) => (s.firstAt === null || s.lastAt === null || s.lastAt === s.firstAt ? 0 : s.received / ((s.lastAt - s.firstAt) / 1000));

async function clearSends(admin: Client): Promise<void> {
  await admin.query('TRUNCATE deliveries, events, jobs');
  await admin.query('VACUUM ANALYZE deliveries');
  await admin.query('CHECKPOINT');
}

async function ordinarySend(c: Client, url: string, sink: Child, port: number, f: Fixture, typeId: number, dataDir: string) {
  const herald = await startServe({ databaseUrl: url, smtpPort: port, dataDir, publicUrl: PUBLIC_URL, cpu: PIN ? '0' : undefined, nodeArgs: profileArgs('ordinary') });
  try {
    await ask(sink, { type: 'reset', keep: 0 });
    const meter = meterFromFirstMessage(sink, herald.child.pid!);
    const { utr } = await createSend(herald.baseUrl, f.account, { senderId: f.senderId, groupId: f.groupId, typeId, name: 'Ordinary 1M' });
    const row = await waitUntil(c, herald, utr, 'ordinary send', (r) => r.status === 3);
    const sink1 = await ask<SinkStats>(sink, { type: 'stats' });
    return { utr, delivered: row.delivered, sink: { ...sink1, samples: undefined }, rate: Math.round(rateOf(sink1)), cpu: perMessage((await meter).read(), sink1.received) };
  } finally {
    await herald.stop(60_000);
  }
}

async function abSend(c: Client, url: string, sink: Child, port: number, f: Fixture, typeId: number, dataDir: string) {
  const herald = await startServe({ databaseUrl: url, smtpPort: port, dataDir, publicUrl: PUBLIC_URL, cpu: PIN ? '0' : undefined, nodeArgs: profileArgs('ab') });
  try {
    await ask(sink, { type: 'reset', keep: 0 });
    const testCpu = meterFromFirstMessage(sink, herald.child.pid!);
    const { utr } = await createSend(herald.baseUrl, f.account, {
      senderId: f.senderId,
      groupId: f.groupId,
      typeId,
      name: 'A/B 1M',
      fields: {
        ab_test_type: 'subject',
        'ab_variations[0][subject]': 'The November issue, B edition, ((first_name))',
        ab_test_percentage: TEST_PERCENTAGE,
        ab_duration_minutes: 1,
        ab_winner_criteria: 'click',
      },
    });
    const { id } = await sendRow(c, utr);
    await waitUntil(c, herald, utr, 'test phase', async () => {
      const t = await c.query(`SELECT test_done_at FROM ab_tests WHERE single_send_id = $1`, [id]);
      return t.rows[0]?.test_done_at !== null && t.rows[0]?.test_done_at !== undefined;
    });
    const testPhase = await ask<SinkStats>(sink, { type: 'stats' });
    const testPhaseCpu = perMessage((await testCpu).read(), testPhase.received);
    const held = Number((await c.query(`SELECT count(*) AS n FROM deliveries WHERE single_send_id = $1 AND status = 'held'`, [id])).rows[0].n);
    await ask(sink, { type: 'reset', keep: 0 });
    // The decision is due now (instead of a minute after the test group's last message).
    const due = Date.now();
    await c.query(`UPDATE jobs SET next_attempt_at = now() WHERE kind = 'ab_decision' AND (payload->>'singleSendId')::int = $1`, [id]);
    for (;;) {
      const t = await c.query(`SELECT status FROM ab_tests WHERE single_send_id = $1`, [id]);
      if (t.rows[0].status === 'decided') break;
      if (Date.now() - due > 600_000) throw new Error(`no decision within 10 minutes:\n${herald.output()}`);
      await sleep(10);
    }
    const decidedSeenMs = Date.now() - due;
    // The winner phase's CPU meter starts with its first message (here: one question to the sink at a time, or answers cross).
    let winnerCpu: ReturnType<typeof cpuMeter> | undefined;
    const firstWinner = await (async () => {
      for (;;) {
        const st = await ask<SinkStats>(sink, { type: 'stats' });
        if (st.firstAt !== null) {
          winnerCpu = cpuMeter(herald.child.pid!);
          return st.firstAt - due;
        }
        if (Date.now() - due > 600_000) throw new Error(`no winner message within 10 minutes:\n${herald.output()}`);
        await sleep(10);
      }
    })();
    const logged = /"released":(\d+),"releaseMs":(\d+)/.exec(herald.output());
    const row = await waitUntil(c, herald, utr, 'winner phase', (r) => r.status === 3);
    const winnerPhase = await ask<SinkStats>(sink, { type: 'stats' });
    const winnerPhaseCpu = perMessage(winnerCpu!.read(), winnerPhase.received);
    const spanS = (s: SinkStats) => (s.lastAt! - s.firstAt!) / 1000;
    const rate = (testPhase.received + winnerPhase.received) / (spanS(testPhase) + spanS(winnerPhase));
    // The report, with the send's million recipients' events recorded.
    const api = client(herald.baseUrl, f.account);
    const times: number[] = [];
    let ab: unknown;
    for (let i = 0; i < 31; i += 1) {
      const t = performance.now();
      const res = (await api.get(`/single/send/stats?utr=${utr}`)) as { message: { ab: unknown } };
      if (i > 0) times.push(performance.now() - t);
      ab = res.message.ab;
    }
    const events = Number((await c.query(`SELECT count(*) AS n FROM events WHERE single_send_id = $1`, [id])).rows[0].n);
    return {
      utr,
      delivered: row.delivered,
      held,
      release: { loggedReleased: logged ? Number(logged[1]) : null, loggedMs: logged ? Number(logged[2]) : null, decidedSeenMs, firstWinnerMessageMs: firstWinner },
      testPhase: { ...testPhase, samples: undefined, rate: Math.round(rateOf(testPhase)), cpu: testPhaseCpu },
      winnerPhase: { ...winnerPhase, samples: undefined, rate: Math.round(rateOf(winnerPhase)), cpu: winnerPhaseCpu },
      rate: Math.round(rate),
      stats: { events, medianMs: round(median(times)), maxMs: round(Math.max(...times)), runs: times.map((t) => round(t)) },
      ab,
    };
  } finally {
    await herald.stop(60_000);
  }
}

async function main() {
  const started = Date.now();
  await withSendBench({ db: DB, account: 'Bench A/B', pin: PIN, keep: opts.has('keep'), build: !opts.has('no-build') }, async ({ dataDir, sink, port, url, c, admin, f }) => {
    const typeId = await makeList(c, f, 'Bench A/B', 'm-', RECIPIENTS);
    await admin.query('VACUUM ANALYZE');
    log(`${RECIPIENTS.toLocaleString('en')} contacts`);

    const ordinaries: Array<Awaited<ReturnType<typeof ordinarySend>> & { quiet: number }> = [];
    let abRun: (Awaited<ReturnType<typeof abSend>> & { quiet: number }) | undefined;
    for (const [i, which] of ORDER.entries()) {
      if (i > 0) await clearSends(admin);
      const quiet = await waitForQuiet(120_000);
      if (which === 'ab') {
        abRun = { ...(await abSend(c, url, sink, port, f, typeId, dataDir)), quiet };
        continue;
      }
      const result = await ordinarySend(c, url, sink, port, f, typeId, dataDir);
      log(`ordinary send: ${result.rate} msg/s (first to last message); CPU per message: Herald ${result.cpu.heraldMsPerMessage} ms, PostgreSQL ${result.cpu.postgresMsPerMessage} ms; background ${quiet}`);
      ordinaries.push({ ...result, quiet });
    }
    const ab = abRun!;
    const quiet2 = ab.quiet;
    const ordinaryRate = Math.round(ordinaries.reduce((sum, o) => sum + o.rate, 0) / ordinaries.length);
    log(
      `A/B send: ${ab.rate} msg/s (test phase ${ab.testPhase.rate}, winner phase ${ab.winnerPhase.rate}); release of ${ab.release.loggedReleased} rows ${ab.release.loggedMs} ms ` +
        `(decided seen ${ab.release.decidedSeenMs} ms, first winner message ${ab.release.firstWinnerMessageMs} ms after due); stats median ${ab.stats.medianMs} ms; background ${quiet2}; ` +
        `CPU per message: Herald ${ab.testPhase.cpu.heraldMsPerMessage} / ${ab.winnerPhase.cpu.heraldMsPerMessage} ms, PostgreSQL ${ab.testPhase.cpu.postgresMsPerMessage} / ${ab.winnerPhase.cpu.postgresMsPerMessage} ms (test / winner phase)`,
    );
    const testSize = Math.round((RECIPIENTS * TEST_PERCENTAGE) / 100);
    const checks = {
      ordinaryDeliveredAll: ordinaries.every((o) => o.delivered === RECIPIENTS && o.sink.received === RECIPIENTS && o.sink.duplicates === 0),
      abDeliveredAll: ab.delivered === RECIPIENTS && ab.testPhase.received + ab.winnerPhase.received === RECIPIENTS,
      testGroupItsShare: ab.testPhase.received === testSize && ab.held === RECIPIENTS - testSize,
      releaseLogged: ab.release.loggedReleased === RECIPIENTS - testSize,
      everyEventRecorded: ab.stats.events >= RECIPIENTS,
    };
    const ratio = ab.rate / ordinaryRate;
    const met = {
      release: ab.release.loggedMs !== null && ab.release.loggedMs <= TARGET.releaseMs && ab.release.firstWinnerMessageMs <= TARGET.releaseMs,
      rate: ratio >= TARGET.rateRatio,
      stats: ab.stats.medianMs <= TARGET.statsMs,
    };
    const file = writeResult('ab', {
      benchmark: 'ab',
      when: new Date().toISOString(),
      machine: machineInfo(),
      postgres: await serverInfo(c),
      recipients: RECIPIENTS,
      target: { ...TARGET, met },
      ratio: round(ratio, 3),
      order: ORDER,
      ordinaryRate,
      ordinaries,
      ab,
      checks,
      totalMs: Date.now() - started,
    });
    const verdict = (v: boolean) => (v ? 'PASS' : 'FAIL');
    process.stdout.write(
      [
        '',
        `A/B benchmark — ${RECIPIENTS.toLocaleString('en')} recipients, ${TEST_PERCENTAGE} % test, 2 variations; Herald as npm start runs it (defaults)`,
        `  release of the held rows (${ab.release.loggedReleased}): ${ab.release.loggedMs} ms in the decision; decided seen ${ab.release.decidedSeenMs} ms, the winner's first message ${ab.release.firstWinnerMessageMs} ms after due   ${verdict(met.release)} (≤ ${TARGET.releaseMs} ms)`,
        `  sending rate: A/B ${ab.rate} msg/s (test ${ab.testPhase.rate}, winner ${ab.winnerPhase.rate}) vs ordinary ${ordinaryRate} msg/s (${ORDER.join(', ')}: the mean of ${ordinaries.map((o) => o.rate).join(' and ')}) = ${round(ratio * 100)} %   ${verdict(met.rate)} (≥ ${TARGET.rateRatio * 100} %)`,
        `  GET /single/send/stats with ab (${ab.stats.events.toLocaleString('en')} events): median ${ab.stats.medianMs} ms, max ${ab.stats.maxMs} ms   ${verdict(met.stats)} (≤ ${TARGET.statsMs} ms)`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, Object.values(met).every(Boolean), checks);
  });
}

runMain(main);
