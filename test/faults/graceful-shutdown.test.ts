/**
 * Graceful shutdown (issue 6): SIGTERM to a `herald worker` in the middle of a send, and to a
 * `herald serve` in the middle of a large CSV import. In-flight work either finishes and is
 * recorded, or rolls back; nothing is ever half-written, and the process exits 0.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { isolatedUrl } from '../setup/isolated';
import { freePort } from '../helpers/net';
import { addressesIn, bulkContacts, createSend, deliveryStatuses, few, minus, NONE, report, waitForCompleted } from './lib/campaign';
import { patient, waitFor } from '../helpers/wait';
import { heraldEnv, requireBuilt, startServe, startWorker, useChildren, type Exit } from './lib/processes';
import { startSink, type Sink } from './lib/sink';
import { uploadCsv, type UploadResult } from './lib/upload';

requireBuilt();
useChildren();

const { app, db } = setupApp({}, 'shutdown');
const databaseUrl = isolatedUrl(testDatabaseUrl(), 'shutdown');
/** Each scenario takes 2–10 s alone; the bounded waits inside fail first, with a message. */
const SCENARIO_MS = patient(120_000);

let sink: Sink;
let a: TestAccount;

beforeAll(async () => {
  sink = await startSink(1);
  a = await makeAccount(db, 'Shutdown');
});

describe('SIGTERM to a worker process during a send', () => {
  it('finishes and records the messages in flight, exits 0, and a new worker completes the send with no duplicate', async () => {
    const N = 2_000;
    const BATCH = 50;
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a, 'News');
    const list = await makeContactType(db, a, 'Shutdown send');
    const audience = await bulkContacts(db, a, list, N, 's', 'shutdown.test');
    const env = heraldEnv(databaseUrl, { SMTP_URL: sink.urls[0], SEND_BATCH_SIZE: String(BATCH), SEND_CONCURRENCY: '20' });
    const worker = startWorker('worker-1', env);
    await worker.ready;
    // 25 % of the send and half a batch go through at once; then the sink answers each message
    // after 300 ms, so the worker has a batch half sent when the signal comes.
    const signalAt = N / 4 + BATCH / 2;
    await sink.setDelay(300, signalAt);
    const send = await createSend(app, db, a, { sender, group, list, name: 'Shutdown send' });
    const where = { single_send_id: send.id };
    const mine = (m: { to: string }) => m.to.endsWith('@shutdown.test');
    await waitFor('a quarter of the send to reach the sink', async () => sink.accepted.filter(mine).length >= signalAt, {
      timeoutMs: 30_000,
      intervalMs: 5,
      describe: async () => `rows ${JSON.stringify(await deliveryStatuses(db, where))}\n${worker.output()}`,
    });
    const atSignal = await deliveryStatuses(db, where);
    expect(atSignal.sending).toBeGreaterThan(0); // a batch is in flight

    const exit = await worker.signalAndWait('SIGTERM', 10_000);
    expect(exit.code).toBe(0);
    await sink.setDelay(0);
    await sink.sync();
    // Nothing left claimed: the batch in flight was finished and recorded before the exit…
    const afterExit = await deliveryStatuses(db, where);
    expect(afterExit.sending ?? 0).toBe(0);
    // …and recorded exactly as the SMTP server saw it: sent = accepted, nothing more or less.
    const sent = await addressesIn(db, where, 'sent');
    const accepted = new Set(sink.counts(mine).keys());
    expect(sent.length).toBe(accepted.size);
    expect(few(minus(sent, accepted))).toEqual(NONE);
    expect((await db('single_sends').where({ id: send.id }).first('delivered')).delivered).toBe(sent.length);
    // It stopped claiming: the rest is still queued for the next worker.
    expect(afterExit.queued).toBeGreaterThan(0);

    const next = startWorker('worker-2', env);
    await next.ready;
    await waitForCompleted(db, send.id, 30_000);
    await sink.sync();
    const counts = sink.counts(mine);
    expect(few([...counts].filter(([, n]) => n > 1).map(([to]) => to))).toEqual(NONE); // no duplicate
    expect(few(minus(audience, new Set(counts.keys())))).toEqual(NONE);
    expect(await db('single_sends').where({ id: send.id }).first('status', 'delivered')).toEqual({ status: 3, delivered: N });
    expect((await next.signalAndWait('SIGTERM', 10_000)).code).toBe(0);
    report('graceful-shutdown worker', {
      recipients: N,
      rowsAtSignal: atSignal,
      exitMs: exit.ms,
      rowsAfterExit: afterExit,
    });
  }, SCENARIO_MS);
});

describe('SIGTERM to an API process during a 200,000-row CSV import', () => {
  const ROWS = 200_000;

  interface Outcome {
    upload: UploadResult;
    exit: Exit & { ms: number };
    contacts: number;
    imports: Array<{ status: string; inserted: number }>;
    uploadsLeft: string[];
  }

  /**
   * Streams the import to a fresh `herald serve`, sends SIGTERM when `signalWhen` says so,
   * and collects what was written. Asserts the invariant every scenario shares: all rows or
   * none (never part of the file), the import record agrees, and the process exits 0.
   */
  async function importWithSigterm(
    label: string,
    env: Record<string, string>,
    signalWhen: (ctx: { rowsWritten: number; typeId: number }) => Promise<boolean>,
    paceMs = 0,
  ): Promise<Outcome> {
    const typeId = await makeContactType(db, a, label);
    const port = await freePort();
    const serverEnv = heraldEnv(databaseUrl, { PORT: String(port), WORKER: '0', ...env });
    const server = startServe(`serve-${label}`, serverEnv);
    await server.ready;
    let rowsWritten = 0;
    const upload = uploadCsv({
      baseUrl: server.url,
      headers: a.headers,
      contactTypeId: typeId,
      rows: ROWS,
      email: (i) => `${label}-${i}@import.test`,
      paceMs,
      onProgress: (n) => (rowsWritten = n),
    });
    await waitFor(`the moment to signal (${label})`, () => signalWhen({ rowsWritten, typeId }), {
      timeoutMs: 30_000,
      intervalMs: 10,
      describe: () => server.output(),
    });
    const exitPromise = server.signalAndWait('SIGTERM', 40_000);
    const [result, exit] = await Promise.all([upload, exitPromise]);
    const contacts = Number((await db('contacts').where({ contact_type_id: typeId }).count('* as n').first())?.n);
    const imports = (await db('contact_imports').where({ contact_type_id: typeId }).select('status', 'inserted')) as Outcome['imports'];
    const uploadsDir = path.join(serverEnv.DATA_DIR, 'uploads');
    const uploadsLeft = fs.existsSync(uploadsDir) ? fs.readdirSync(uploadsDir) : [];

    const context = JSON.stringify({ result, exit, contacts, imports }, null, 2).slice(0, 3000) + `\n${server.output()}`;
    // Never a partial import.
    if (![0, ROWS].includes(contacts)) throw new Error(`partial import: ${contacts} of ${ROWS} rows written\n${context}`);
    if (contacts === ROWS) expect(imports).toEqual([{ status: 'completed', inserted: ROWS }]);
    else for (const i of imports) expect({ status: i.status, context }).toEqual({ status: 'failed', context });
    // A 200 means committed, all of it.
    if (result.kind === 'response' && result.status === 200) expect(contacts).toBe(ROWS);
    expect({ exit: exit.code, context }).toEqual({ exit: 0, context });
    expect(uploadsLeft).toEqual([]);
    return { upload: result, exit, contacts, imports, uploadsLeft };
  }

  it('once the upload is in progress: the upload and import are let finish, all rows committed, 200', async () => {
    const o = await importWithSigterm('drained', { SHUTDOWN_TIMEOUT_MS: '40000' }, async ({ rowsWritten }) => rowsWritten >= ROWS / 4);
    expect(o.upload).toMatchObject({ kind: 'response', status: 200, body: { status: 'success', message: 'Imported Successfully' } });
    expect(o.contacts).toBe(ROWS);
    report('graceful-shutdown import drained', { rows: ROWS, exitMs: o.exit.ms, contacts: o.contacts });
  }, SCENARIO_MS);

  it('a client too slow for the drain window: the upload is cut, nothing is written', async () => {
    const o = await importWithSigterm('cut-upload', { SHUTDOWN_TIMEOUT_MS: '1000' }, async ({ rowsWritten }) => rowsWritten >= ROWS / 4, 40);
    expect(o.upload.kind).toBe('error');
    expect(o.contacts).toBe(0);
    report('graceful-shutdown import cut mid-upload', { rows: ROWS, rowsUploaded: o.upload.rowsWritten, exitMs: o.exit.ms, imports: o.imports });
  }, SCENARIO_MS);

  it('during the import’s transaction with no drain window: all or nothing, never part', async () => {
    const o = await importWithSigterm('cut-import', { SHUTDOWN_TIMEOUT_MS: '0' }, async ({ typeId }) =>
      Boolean(await db('contact_imports').where({ contact_type_id: typeId, status: 'running' }).first('id')),
    );
    report('graceful-shutdown import cut mid-transaction', {
      rows: ROWS,
      upload: o.upload.kind === 'response' ? o.upload.status : o.upload.error,
      exitMs: o.exit.ms,
      contacts: o.contacts,
      imports: o.imports,
    });
  }, SCENARIO_MS);
});

describe('SIGTERM to an API process whose import statement outlasts SHUTDOWN_TIMEOUT_MS (issue 18)', () => {
  it('cancels the import past the timeout, records it failed with the reason, writes nothing, and exits in time', async () => {
    const TIMEOUT_MS = 2000;
    const ROWS = 2000;
    const typeId = await makeContactType(db, a, 'stuck');
    const port = await freePort();
    const server = startServe('serve-stuck', heraldEnv(databaseUrl, { PORT: String(port), WORKER: '0', SHUTDOWN_TIMEOUT_MS: String(TIMEOUT_MS) }));
    await server.ready;
    // A lock the import's COPY into contacts waits for: its statement runs as long as the test wants.
    const blocker = await db.transaction();
    try {
      await blocker.raw('LOCK TABLE contacts IN SHARE MODE');
      const upload = uploadCsv({ baseUrl: server.url, headers: a.headers, contactTypeId: typeId, rows: ROWS, email: (i) => `stuck-${i}@import.test` });
      await waitFor(
        'the import’s COPY to wait on the lock',
        async () => {
          const { rows } = await db.raw(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'COPY contacts %'`);
          return rows.length > 0;
        },
        { timeoutMs: 30_000, describe: () => server.output() },
      );
      const exit = await server.signalAndWait('SIGTERM', 30_000);
      const result = await upload;
      const context = `${JSON.stringify({ exit, result })}\n${server.output()}`;
      // It waited for the timeout, then cancelled the statement and stopped well within a margin.
      expect({ code: exit.code, context }).toEqual({ code: 0, context });
      expect(exit.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
      expect(exit.ms).toBeLessThan(TIMEOUT_MS + patient(5000));
      const imports = await db('contact_imports').where({ contact_type_id: typeId }).select('status', 'inserted', 'error');
      expect(imports).toEqual([{ status: 'failed', inserted: 0, error: expect.stringMatching(/stopped \(SIGTERM\) while the import ran, past SHUTDOWN_TIMEOUT_MS; nothing was imported/) }]);
      report('graceful-shutdown import statement cancelled', { rows: ROWS, timeoutMs: TIMEOUT_MS, exitMs: exit.ms, imports });
    } finally {
      await blocker.rollback();
    }
    // Nothing half-written: the import's transaction rolled back.
    expect(await db('contacts').where({ contact_type_id: typeId }).count({ n: '*' })).toEqual([{ n: 0 }]);
  }, SCENARIO_MS);
});
