import http from 'node:http';
import type { Express } from 'express';
import request from 'supertest';
import { KeyCache } from '../../src/accounts/key-cache';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createDb } from '../../src/db/knex';
import { createLogger } from '../../src/logger';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';
import { makeContactType, makeContacts } from '../helpers/fixtures';
import { memoryMailer } from '../helpers/mail';
import { patient, waitFor } from '../helpers/wait';

/**
 * The CSV import's paths and limits beyond the basics in contacts.test.ts: an existing list
 * (rows that match, change, repeat, or are new), the same file through the staged path,
 * another session adding an address during the import, progress while it runs, and the
 * limits that govern a long import (IMPORT_TIMEOUT_MS, not DB_QUERY_TIMEOUT_MS or the HTTP
 * request timeout). Locks held by the test stop an import at a known point; nothing here
 * depends on how fast anything runs.
 */
const { app, db } = setupApp();
const limited = setupApp({ IMPORT_TIMEOUT_MS: '1000' });
let a: TestAccount;
let fields: Record<string, string>;

beforeAll(async () => {
  a = await makeAccount(db, 'Import');
  await db('custom_fields').insert([
    { user_id: a.id, field_name: 'plan', field_type: 'text' },
    { user_id: a.id, field_name: 'score', field_type: 'number' },
  ]);
  fields = Object.fromEntries((await db('custom_fields').where({ user_id: a.id })).map((f) => [f.field_name, String(f.id)]));
});

function upload(target: Express | http.Server, typeId: number, csv: string, account = a): request.Test {
  return request(target).post('/contacts/upload-csv').set(account.headers).field('contact_type_id', String(typeId)).attach('file', Buffer.from(csv), 'contacts.csv');
}

async function lastImport(account = a) {
  const res = await api(app, account).get('/contacts/imports');
  return expectShape(importRecord, res.body.message.imports[0]);
}

async function contactsOf(typeId: number) {
  const rows = await db('contacts').where({ contact_type_id: typeId }).whereNull('deleted_at').orderBy('id');
  return new Map(rows.map((r) => [r.email.toLowerCase(), r]));
}

/** What the sessions of this database other than the test's own are doing (for a failure message). */
async function sessions() {
  const { rows } = await db.raw(
    `SELECT pid, state, wait_event_type, wait_event, left(query, 60) AS query FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
  );
  return rows as unknown[];
}

/**
 * The response to an upload the test let run, or a failure naming what the import's sessions
 * are doing: a stuck import fails the test within its bounds instead of at jest's timeout.
 */
async function responseOf(pending: Promise<request.Response>, timeoutMs = 30_000): Promise<request.Response> {
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void sessions().then(
        (s) => reject(new Error(`The import gave no response within ${patient(timeoutMs)} ms; sessions: ${JSON.stringify(s)}`)),
        (err: unknown) => reject(new Error(`The import gave no response within ${patient(timeoutMs)} ms (${String(err)})`)),
      );
    }, patient(timeoutMs));
  });
  try {
    return await Promise.race([pending, stuck]);
  } finally {
    clearTimeout(timer);
  }
}

/** A session of the import waiting for a lock, with its query (the import is then stopped there). */
async function importWaitingOn(pattern: RegExp): Promise<string> {
  return waitFor(
    `an import waiting on ${pattern}`,
    async () => {
      const { rows } = await db.raw(`SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
      return (rows as Array<{ query: string }>).map((r) => r.query).find((q) => pattern.test(q));
    },
    { describe: sessions },
  );
}

const EXISTING = [
  { email: 'ann@list.test', first_name: 'Ann', city: 'Oslo', custom_fields: {} as Record<string, string> },
  { email: 'bob@list.test', first_name: 'Bob', city: 'Rome', custom_fields: {} },
  { email: 'cy@list.test', first_name: 'Cy', city: 'Kyiv', custom_fields: {} },
];

/** Matched, unchanged, new, repeated new, invalid, repeated existing: every kind of row. */
const MIXED = [
  'email,first_name,city,plan',
  'ANN@list.test,Anna,,', // 2: existing, a change; blank cells keep Ann's city and plan
  'bob@list.test,Bob,Rome,', // 3: existing, nothing changes
  'new1@list.test,New,Paris,silver', // 4: new
  'new2@list.test,Two,Lima,', // 5: new, named again on line 7
  'not-an-email,Bad,,', // 6: invalid
  'new2@list.test,Twice,,', // 7: the last row of new2 wins as it is (blank city: empty)
  'cy@list.test,Cee,,bronze', // 8: existing, named again on line 9
  'CY@LIST.TEST,,Berlin,', // 9: the last row of cy wins over Cy's stored values only
].join('\n');

async function checkMixedOutcome(typeId: number, bobBefore: { updated_at: string }) {
  const rec = await lastImport();
  expect(rec).toMatchObject({ status: 'completed', rows_read: 8, inserted: 2, updated: 2, unchanged: 1, skipped: 3 });
  expect(rec.reasons.map((r) => r.row)).toEqual([5, 6, 8]);
  expect(rec.reasons[0].reason).toMatch(/appears again further down/);
  expect(rec.bytes_read).toBe(rec.file_bytes);
  const c = await contactsOf(typeId);
  expect(c.get('ann@list.test')).toMatchObject({ email: 'ANN@list.test', first_name: 'Anna', city: 'Oslo', custom_fields: { [fields.plan]: 'gold' } });
  expect(String(c.get('bob@list.test').updated_at)).toBe(String(bobBefore.updated_at));
  expect(c.get('new1@list.test')).toMatchObject({ first_name: 'New', city: 'Paris', custom_fields: { [fields.plan]: 'silver' } });
  expect(c.get('new2@list.test')).toMatchObject({ first_name: 'Twice', city: '', custom_fields: {} });
  expect(c.get('cy@list.test')).toMatchObject({ email: 'CY@LIST.TEST', first_name: 'Cy', city: 'Berlin', custom_fields: {} });
  return c;
}

describe('an import into a list that already has contacts', () => {
  it('counts each kind of row and keeps the last row of an address (existing contacts keep blank cells)', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ ...EXISTING[0], custom_fields: { [fields.plan]: 'gold' } }, EXISTING[1], EXISTING[2]]);
    const bob = await db('contacts').where({ contact_type_id: type, email: 'bob@list.test' }).first();
    const res = await upload(app, type, MIXED);
    expect(res.body).toEqual({ status: 'success', message: 'Imported Successfully' });
    expect((await checkMixedOutcome(type, bob)).size).toBe(5);
  });

  it('gives the same outcome when every row is staged (a list much larger than the file)', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ ...EXISTING[0], custom_fields: { [fields.plan]: 'gold' } }, EXISTING[1], EXISTING[2]]);
    await makeContacts(db, a, type, Array.from({ length: 300 }, (_, i) => ({ email: `filler${i}@list.test` })));
    const bob = await db('contacts').where({ contact_type_id: type, email: 'bob@list.test' }).first();
    expect((await upload(app, type, MIXED)).status).toBe(200);
    expect((await checkMixedOutcome(type, bob)).size).toBe(305);
  });

  it('into an empty list, an address named three times is written once, from its last row', async () => {
    const type = await makeContactType(db, a);
    const csv = ['email,first_name,city,score', 'dup@list.test,One,Oslo,1', 'other@list.test,O,,', 'Dup@List.test,Two,,2', 'DUP@LIST.TEST,Three,,'].join('\n');
    expect((await upload(app, type, csv)).status).toBe(200);
    expect(await lastImport()).toMatchObject({ rows_read: 4, inserted: 2, updated: 0, skipped: 2, reasons: [expect.objectContaining({ row: 2 }), expect.objectContaining({ row: 4 })] });
    const c = await contactsOf(type);
    expect(c.size).toBe(2);
    expect(c.get('dup@list.test')).toMatchObject({ email: 'DUP@LIST.TEST', first_name: 'Three', city: '', custom_fields: {} });
  });

  it('treats addresses that differ only in non-ASCII letter case as PostgreSQL does', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ email: 'zoe@ÉCOLE.test', first_name: 'Zoë' }]);
    const { rows } = await db.raw(`SELECT lower('ÉCOLE') = 'école' AS folds`);
    expect((await upload(app, type, 'email,first_name\nzoe@école.test,Zoe\nzed@école.test,Zed\n')).status).toBe(200);
    const c = await contactsOf(type);
    if (rows[0].folds) {
      // The address set lower-cases ASCII only, so the first row looked new; the unique index
      // said otherwise and the import read the file again with every row staged.
      expect(await lastImport()).toMatchObject({ inserted: 1, updated: 1, skipped: 0 });
      expect(c.size).toBe(2);
      expect(c.get('zoe@école.test')).toMatchObject({ email: 'zoe@école.test', first_name: 'Zoe' });
    } else {
      expect(await lastImport()).toMatchObject({ inserted: 2, updated: 0 });
      expect(c.size).toBe(3);
    }
  });
});

describe('a second attempt', () => {
  it('reads the file again from its first byte when PostgreSQL overrules the routing with most of the file unread', async () => {
    const { rows } = await db.raw(`SELECT lower('ÉCOLE') = 'école' AS folds`);
    if (!rows[0].folds) return; // the routing and PostgreSQL agree: there is no second attempt to test
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ email: 'again@ÉCOLE.test', first_name: 'Old' }]);
    // Row 2 looks new to the address set (ASCII lower-casing) but not to the unique index: the
    // direct COPY fails at once and the import starts over, staging every row.
    const ROWS = 200_000;
    const csv = `email,first_name\nagain@école.test,New\n${Array.from({ length: ROWS - 1 }, (_, i) => `again-${i + 3}@big.test,Row ${i + 3}`).join('\n')}\n`;
    const res = await upload(app, type, csv);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Imported Successfully' } });
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: ROWS - 1, updated: 1, skipped: 0 });
    expect((await contactsOf(type)).size).toBe(ROWS);
  });
});

/** A file of `rows` new addresses; row i (1-based) is `${label}-${i}@big.test`. */
const bigCsv = (label: string, rows: number) =>
  `email,first_name,city\n${Array.from({ length: rows }, (_, i) => `${label}-${i + 1}@big.test,First ${i + 1},Town ${i % 97}`).join('\n')}\n`;

describe('while an import runs', () => {
  const ROWS = 60_000;

  it('shows its progress, and an address another session adds meanwhile is neither lost nor an error', async () => {
    const type = await makeContactType(db, a);
    const blocker = await db.transaction();
    try {
      // An API request's transaction in flight with the address of line 2001.
      await blocker('contacts').insert({ user_id: a.id, contact_type_id: type, email: 'busy-2000@big.test', first_name: 'Added meanwhile' });
      const pending = upload(app, type, bigCsv('busy', ROWS)).then((r) => r);
      await importWaitingOn(/^COPY contacts/);
      const seen = await waitFor('progress', async () => {
        const rec = await lastImport();
        return rec.rows_read > 0 ? rec : undefined;
      });
      expect(seen).toMatchObject({ status: 'running', inserted: 0 });
      expect(seen.rows_read).toBeLessThanOrEqual(ROWS);
      expect(seen.bytes_read).toBeGreaterThan(0);
      expect(seen.bytes_read).toBeLessThanOrEqual(seen.file_bytes);
      await blocker.commit();
      expect((await responseOf(pending)).body).toEqual({ status: 'success', message: 'Imported Successfully' });
    } finally {
      if (!blocker.isCompleted()) await blocker.rollback();
    }
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: ROWS - 1, updated: 1, skipped: 0 });
    const added = await db('contacts').where({ contact_type_id: type }).whereRaw('lower(email) = ?', ['busy-2000@big.test']);
    expect(added).toHaveLength(1);
    expect(added[0].first_name).toBe('First 2000');
    expect(Number((await db('contacts').where({ contact_type_id: type }).count({ n: '*' }))[0].n)).toBe(ROWS);
  });
});

describe('a restart while the first pass is still reading the file', () => {
  // More than the buffers between Herald and PostgreSQL hold (the sockets' few MB): while the
  // COPY waits on its first row, Herald stops reading part-way through the file.
  const ROWS = 200_000;

  it('reads the whole file again from the start (the first pass, cut short, leaves the upload readable)', async () => {
    // An account of its own: the stage-all merge at the end looks up the account's contacts
    // per staged row, and this one has none but the blocker's.
    const own = await makeAccount(db, 'Restart');
    const type = await makeContactType(db, own);
    const blocker = await db.transaction();
    try {
      await blocker('contacts').insert({ user_id: own.id, contact_type_id: type, email: 'cut-1@big.test', first_name: 'Added meanwhile' });
      const pending = upload(app, type, bigCsv('cut', ROWS), own).then((r) => r);
      await importWaitingOn(/^COPY contacts/);
      let before = -1;
      const paused = await waitFor(
        'the first pass to stop reading (two progress updates with the same bytes_read)',
        async () => {
          const rec = await lastImport(own);
          const still = rec.bytes_read > 0 && rec.bytes_read === before;
          before = rec.bytes_read;
          return still ? rec : undefined;
        },
        { intervalMs: 1100 },
      );
      // The point of this test: the file is only partly read when the COPY fails.
      expect(paused.bytes_read).toBeLessThan(paused.file_bytes);
      await blocker.commit();
      expect((await responseOf(pending)).body).toEqual({ status: 'success', message: 'Imported Successfully' });
    } finally {
      if (!blocker.isCompleted()) await blocker.rollback();
    }
    const rec = await lastImport(own);
    expect(rec).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: ROWS - 1, updated: 1, skipped: 0 });
    expect(rec.bytes_read).toBe(rec.file_bytes);
    expect(Number((await db('contacts').where({ contact_type_id: type }).count({ n: '*' }))[0].n)).toBe(ROWS);
  });
});

describe('limits of a long import', () => {
  /**
   * An app whose sessions have a 100 ms statement timeout, with a key cache as `herald serve`
   * has, warmed for the account: the upload then runs no statement but the import's own, and
   * those must be bound by IMPORT_TIMEOUT_MS alone (not by how busy the machine is).
   */
  async function strictApp(): Promise<{ app: Express; db: ReturnType<typeof createDb>; close(): Promise<void> }> {
    const url = testDatabaseUrl();
    const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent', DB_QUERY_TIMEOUT_MS: '100', PUBLIC_URL: 'http://herald.test' });
    const strict = createDb({ url, poolMax: 4, queryTimeoutMs: config.dbQueryTimeoutMs });
    const keys = new KeyCache({ url, logger: createLogger('silent') });
    await keys.start();
    const strictApp = createApp({ config, db: strict, logger: createLogger('silent'), mailer: memoryMailer(), keys });
    // The key lookup is an ordinary request's statement (100 ms here, 30 s by default): retried until cached.
    await waitFor('the account’s keys cached', async () => (await api(strictApp, a).get('/contacts/imports')).status === 200);
    return { app: strictApp, db: strict, close: async () => (await keys.stop(), await strict.destroy()) };
  }

  it('is not cut by DB_QUERY_TIMEOUT_MS: a 100 ms statement timeout for the app, a list with contacts, 100,000 rows', async () => {
    const strict = await strictApp();
    try {
      const type = await makeContactType(db, a);
      await makeContacts(db, a, type, Array.from({ length: 2000 }, (_, i) => ({ email: `strict-${i + 1}@big.test` })));
      const res = await upload(strict.app, type, bigCsv('strict', 100_000));
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Imported Successfully' } });
      expect(await lastImport()).toMatchObject({ status: 'completed', inserted: 98_000, updated: 2000, skipped: 0 });
    } finally {
      await strict.close();
    }
  });

  it('closes its record in its own transaction: a record update slower than DB_QUERY_TIMEOUT_MS is no 503 for written contacts', async () => {
    const strict = await strictApp();
    const type = await makeContactType(db, a);
    const holdType = await db.transaction();
    const holdRecord = await db.transaction();
    try {
      // The import stops before its last step (the type's row held), then finds its record's row held too.
      await holdType('contact_types').where({ id: type }).update({ name: holdType.raw('name') });
      const pending = upload(strict.app, type, bigCsv('closing', 1000)).then((r) => r);
      await importWaitingOn(/contacts_version/);
      const rec = await lastImport();
      expect(rec).toMatchObject({ status: 'running', contact_type_id: type });
      await holdRecord.raw('SELECT 1 FROM contact_imports WHERE id = ? FOR UPDATE', [rec.id]);
      await holdType.commit();
      await importWaitingOn(/^update "contact_imports" set "status"/);
      await new Promise((r) => setTimeout(r, 500));
      await holdRecord.commit();
      const res = await pending;
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Imported Successfully' } });
    } finally {
      if (!holdType.isCompleted()) await holdType.rollback();
      if (!holdRecord.isCompleted()) await holdRecord.rollback();
      await strict.close();
    }
    expect(await lastImport()).toMatchObject({ status: 'completed', inserted: 1000 });
    expect(await db('contacts').where({ contact_type_id: type }).count({ n: '*' })).toEqual([{ n: 1000 }]);
  });

  it('stops at IMPORT_TIMEOUT_MS with a 503, writing nothing', async () => {
    const type = await makeContactType(limited.db, a);
    const blocker = await limited.db.transaction();
    try {
      // Holds the type's row as an update would: the import gets everything done but its last step.
      await blocker('contact_types').where({ id: type }).update({ name: blocker.raw('name') });
      const res = await upload(limited.app, type, bigCsv('late', 1000));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'failed', errors: 'The import took longer than IMPORT_TIMEOUT_MS allows (1 s); nothing was imported.' });
    } finally {
      await blocker.rollback();
    }
    expect(await db('contacts').where({ contact_type_id: type }).count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await lastImport()).toMatchObject({ status: 'failed', inserted: 0, error: expect.stringMatching(/IMPORT_TIMEOUT_MS/) });
  });

  it('is not cut by the HTTP request timeout once the file is uploaded', async () => {
    const type = await makeContactType(db, a);
    // The request timeout bounds receiving a request; Herald's is 5 minutes, here 200 ms.
    const server = http.createServer({ requestTimeout: 200, connectionsCheckingInterval: 20 }, app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const blocker = await db.transaction();
    try {
      await blocker('contact_types').where({ id: type }).update({ name: blocker.raw('name') });
      const pending = upload(server, type, bigCsv('slow', 500)).then((r) => r);
      await importWaitingOn(/contacts_version/);
      // Well past the request timeout (several of Node's checks), the import still waits.
      await new Promise((r) => setTimeout(r, 1000));
      await blocker.commit();
      const res = await responseOf(pending);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Imported Successfully' } });
    } finally {
      if (!blocker.isCompleted()) await blocker.rollback();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await lastImport()).toMatchObject({ status: 'completed', inserted: 500 });
  });
});

describe('re-importing a file (issue 18: unchanged rows write nothing)', () => {
  const ROWS = 40;
  const file = (change: (i: number) => string[] = (i) => [`First${i}`, `Town ${i % 5}`, `plan${i % 3}`]) =>
    ['email,first_name,city,plan', ...Array.from({ length: ROWS }, (_, k) => `again${k + 1}@list.test,${change(k + 1).join(',')}`)].join('\n');
  /** Each contact's row version and updated_at: a write of any kind changes xmin. */
  const versions = async (typeId: number) =>
    new Map(
      ((await db('contacts').where({ contact_type_id: typeId }).select(db.raw('email, xmin::text AS xmin, updated_at::text AS updated_at'))) as Array<{ email: string; xmin: string; updated_at: string }>).map((r) => [
        r.email,
        `${r.xmin} ${r.updated_at}`,
      ]),
    );
  const version = async (typeId: number) => (await db('contact_types').where({ id: typeId }).first('contacts_version')).contacts_version as number;
  const berliners = async (segmentId: number) => (await api(app, a).get(`/segment/details?segment_id=${segmentId}`)).body.message.segment.segment_emails_count as number;

  it('the same file again: no contact is written, every row counts as unchanged', async () => {
    const type = await makeContactType(db, a);
    expect((await upload(app, type, file())).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', inserted: ROWS, updated: 0, unchanged: 0 });
    const before = await versions(type);
    const typeVersion = await version(type);

    const again = await upload(app, type, file());
    expect(again.body).toEqual({ status: 'success', message: 'Imported Successfully' });
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: 0, updated: 0, unchanged: ROWS, skipped: 0 });
    expect(await versions(type)).toEqual(before);
    // Nothing changed, so cached segment counts of the list stay valid.
    expect(await version(type)).toBe(typeVersion);
  });

  it('a changed row still updates (a reserved field, a custom value, the city a segment matches on); the rest are unchanged', async () => {
    const type = await makeContactType(db, a);
    const city = (await db('fields').whereNull('user_id').where({ field_name: 'city' }).first('id')).id;
    const saved = await api(app, a).form('/segment/save', { segment_name: 'Berliners', contact_type_id: type, select_field: [city], select_operator: ['is'], value: ['Berlin'] });
    expect(saved.body).toMatchObject({ status: 'success' });
    const segment = (await db('segments').where({ user_id: a.id, contact_type_id: type }).first('id')).id as number;
    expect((await upload(app, type, file())).status).toBe(200);
    expect(await berliners(segment)).toBe(0);
    const before = await versions(type);

    const changes: Record<number, string[]> = { 3: ['Renamed', 'Town 3', 'plan0'], 7: ['First7', 'Town 2', 'platinum'], 11: ['First11', 'Berlin', 'plan2'] };
    const res = await upload(app, type, file((i) => changes[i] ?? [`First${i}`, `Town ${i % 5}`, `plan${i % 3}`]));
    expect(res.status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: ROWS, inserted: 0, updated: 3, unchanged: ROWS - 3, skipped: 0 });
    const after = await versions(type);
    const rewritten = [...after].filter(([email, v]) => before.get(email) !== v).map(([email]) => email);
    expect(rewritten.sort()).toEqual(['again11@list.test', 'again3@list.test', 'again7@list.test']);
    const c = await contactsOf(type);
    expect(c.get('again3@list.test')).toMatchObject({ first_name: 'Renamed' });
    expect(c.get('again7@list.test')).toMatchObject({ custom_fields: { [fields.plan]: 'platinum' } });
    expect(c.get('again11@list.test')).toMatchObject({ city: 'Berlin' });
    expect(await berliners(segment)).toBe(1);
  });
});
