/**
 * Automation entry at scale (issue 5, as a process since issue 9): a custom automation on a
 * contact type of 1,000,000 contacts, one email a day after entry, set live through the API
 * of Herald as `npm start` runs it (one `herald serve` process, API and worker, default
 * settings). Timed: from the set-live call until the worker's entry scan has committed every
 * contact's progress row with its first email scheduled — seen as the automation's
 * entry_scanned_at, written in the scan's transaction (polled every 20 ms; the value itself is
 * the transaction's start, so the time it is first seen is what counts). The rows are counted
 * after.
 *
 * Baseline in the same run: the same 1,000,000 progress rows written by one bare
 * `INSERT … SELECT` from the contacts (rolled back) — what the table itself costs here.
 *
 *   npx tsx bench/automation.ts [--contacts 1000000] [--runs 3] [--no-build] [--keep]
 *
 * Target: every contact entered in under 10 s (median of the runs). Prints best and median,
 * writes bench/out/automation.json, exits 1 on FAIL or a failed check.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { build, checksLine, client, createAccount, finishRun, log, runMain } from './lib/herald';
import { connect, databaseUrl, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { bestMedian, waitForQuiet, writeResult } from './lib/sample';
import { args } from './lib/setup';
import { makeFixture, makeList, type Fixture } from './lib/send-fixture';
import { startServe } from './lib/send-herald';
import { cleanUpOnStop, killAll } from './lib/send-procs';

const opts = args();
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);
const DB = 'herald_bench_automation';
const CONTACTS = num('contacts', 1_000_000);
const RUNS = Math.max(1, num('runs', 3));
const TARGET_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The table's own cost: the progress rows in one bare INSERT … SELECT, rolled back. */
async function bareInsert(admin: Client, f: Fixture, typeId: number, automationId: number, scheduleId: number): Promise<number> {
  await admin.query('BEGIN');
  try {
    const t = Date.now();
    await admin.query(
      `INSERT INTO automation_contacts (user_id, automation_id, contact_id, email, state, next_schedule_id, next_due_at)
       SELECT $1, $2, c.id, c.email, 'active', $3, now() + interval '1 day'
       FROM contacts c WHERE c.user_id = $1 AND c.contact_type_id = $4 AND c.deleted_at IS NULL`,
      [f.userId, automationId, scheduleId, typeId],
    );
    return Date.now() - t;
  } finally {
    await admin.query('ROLLBACK');
  }
}

async function runOnce(c: Client, admin: Client, url: string, f: Fixture, typeId: number, dataDir: string, n: number) {
  await admin.query('TRUNCATE automation_contacts');
  await admin.query('VACUUM ANALYZE automation_contacts');
  const herald = await startServe({ databaseUrl: url, smtpPort: 9, dataDir, publicUrl: 'https://herald.bench.test' });
  try {
    const api = client(herald.baseUrl, f.account);
    const created = (await api.form('/automations/create', {
      type: 'custom',
      automation_for: `contacts_${typeId}`,
      automation_name: `Onboarding #${n}`,
      unsubscribe_group_id: f.groupId,
    })) as { message: { utr: string } };
    const utr = created.message.utr;
    await api.form('/automations/schedule/create', {
      utr,
      sender_id: f.senderId,
      subject: 'Hello ((first_name))',
      waiting_period: 1,
      waiting_type: 'days',
      template_id: 3,
      preview_img: 'template-welcome.png',
    });
    const { rows } = await c.query<{ id: number; schedule_id: number }>(
      `SELECT a.id, s.id AS schedule_id FROM automations a JOIN automation_schedules s ON s.automation_id = a.id WHERE a.utr = $1`,
      [utr],
    );
    const { id, schedule_id: scheduleId } = rows[0];
    const bareMs = await bareInsert(admin, f, typeId, id, scheduleId);
    // The rolled-back rows are dead tuples and dead index entries with the very keys Herald is about
    // to write: every insert's uniqueness check would visit them. Herald starts from the state the
    // baseline had, an empty table.
    await admin.query('TRUNCATE automation_contacts');
    const calledAt = Date.now();
    await api.get(`/automations/set-live?utr=${utr}`);
    const deadline = Date.now() + 300_000;
    let scannedAt: Date | null = null;
    while (!scannedAt) {
      if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
      if (Date.now() > deadline) throw new Error(`entry scan not done within 300 s:\n${herald.output()}`);
      await sleep(20);
      scannedAt = (await c.query<{ t: Date | null }>(`SELECT entry_scanned_at AS t FROM automations WHERE id = $1`, [id])).rows[0].t;
    }
    const enteredMs = Date.now() - calledAt;
    const counts = await c.query<{ active: number; due_in_a_day: number }>(
      `SELECT count(*)::int AS active,
              count(*) FILTER (WHERE next_schedule_id = $2 AND next_due_at BETWEEN now() + interval '23 hours' AND now() + interval '25 hours')::int AS due_in_a_day
       FROM automation_contacts WHERE automation_id = $1 AND state = 'active'`,
      [id, scheduleId],
    );
    return { utr, enteredMs, bareInsertMs: bareMs, ...counts.rows[0] };
  } finally {
    await herald.stop(60_000);
  }
}

async function main() {
  const started = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-automation-'));
  let c: Client | undefined;
  let admin: Client | undefined;
  let dbCreated = false;
  const cleanup = async () => {
    killAll();
    await c?.end().catch(() => undefined);
    await admin?.end().catch(() => undefined);
    if (dbCreated && !opts.has('keep')) await dropDatabase(DB).catch((err) => log(`could not drop ${DB}: ${err.message}`));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  cleanUpOnStop(cleanup);
  try {
    if (!opts.has('no-build')) build();
    const url = await recreateDatabase(DB);
    dbCreated = true;
    const account = await createAccount(url, 'Bench automation');
    c = await connect(url);
    admin = await connect(databaseUrl(DB));
    const f = await makeFixture(c, account);
    const t = Date.now();
    const typeId = await makeList(c, f, 'Everyone', 'a-', CONTACTS);
    await admin.query('VACUUM ANALYZE');
    log(`${CONTACTS.toLocaleString('en')} contacts in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const runs = [];
    for (let r = 1; r <= RUNS; r += 1) {
      const quiet = await waitForQuiet(120_000);
      const run = await runOnce(c, admin, url, f, typeId, dataDir, r);
      log(`run ${r}/${RUNS}: ${run.active.toLocaleString('en')} entered in ${run.enteredMs} ms after set-live (bare INSERT ${run.bareInsertMs} ms); background ${quiet}`);
      runs.push({ quiet, ...run });
    }
    const summary = { enteredMs: bestMedian(runs.map((r) => r.enteredMs)), bareInsertMs: bestMedian(runs.map((r) => r.bareInsertMs)) };
    const checks = { everyContactEntered: runs.every((r) => r.active === CONTACTS && r.due_in_a_day === CONTACTS) };
    const pass = summary.enteredMs.median < TARGET_MS;
    const file = writeResult('automation', {
      benchmark: 'automation',
      when: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryGb: Math.round(os.totalmem() / 1024 ** 3), node: process.version },
      postgres: await serverInfo(c),
      contacts: CONTACTS,
      target: { enteredMs: TARGET_MS, pass },
      summary,
      checks,
      runs,
      totalMs: Date.now() - started,
    });
    process.stdout.write(
      [
        '',
        `Automation benchmark — a custom automation going live on ${CONTACTS.toLocaleString('en')} contacts, ${RUNS} runs, Herald as npm start runs it`,
        `  set-live → everyone entered       best ${summary.enteredMs.best} ms, median ${summary.enteredMs.median} ms  [${summary.enteredMs.runs.join(', ')}]`,
        `  baseline: one bare INSERT … SELECT best ${summary.bareInsertMs.best} ms, median ${summary.bareInsertMs.median} ms  [${summary.bareInsertMs.runs.join(', ')}]`,
        `  target: < ${TARGET_MS / 1000} s (median) — ${pass ? 'PASS' : 'FAIL'}`,
        checksLine(checks),
        '',
      ].join('\n'),
    );
    finishRun(file, started, pass, checks);
  } finally {
    await cleanup();
  }
}

runMain(main);
