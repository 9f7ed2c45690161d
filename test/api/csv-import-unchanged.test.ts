import { PassThrough } from 'node:stream';
import type { PoolClient } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import request from 'supertest';
import { AddressSet } from '../../src/resources/contacts/address-set';
import { fingerprint, fingerprintColumns } from '../../src/resources/contacts/contact-fingerprint';
import * as importSql from '../../src/resources/contacts/csv-import.sql';
import { COPY_TYPE_ADDRESSES } from '../../src/resources/contacts/csv-import.sql';

// The staging table's creation and the merge, counted (the import's own modules see these).
jest.mock('../../src/resources/contacts/csv-import.sql', () => {
  const actual = jest.requireActual('../../src/resources/contacts/csv-import.sql');
  return { ...actual, CREATE_STAGING: jest.fn(actual.CREATE_STAGING), MERGE_STAGED: jest.fn(actual.MERGE_STAGED) };
});
import { CsvRecordReader, type RecordBatch } from '../../src/resources/contacts/csv-records';
import { mapHeader, RowChecker } from '../../src/resources/contacts/csv-rows';
import type { CustomField } from '../../src/resources/contacts/custom-values';
import { RowRouter } from '../../src/resources/contacts/row-router';
import { importRecord } from '../../src/resources/contacts/contacts.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectVal } from '../helpers/expect';
import { makeContactType, makeContacts } from '../helpers/fixtures';

/**
 * A re-import skips the rows that would change nothing while it reads the file, by comparing
 * each row with a fingerprint of its contact's values (contact-fingerprint.ts): those rows are
 * neither staged nor merged. What must hold: the row's side and PostgreSQL's side are written
 * alike exactly when nothing would change (never equal when something would); a row taken as
 * unchanged that a later row of its address replaces stops counting as unchanged; the counts
 * and the contacts are what the merge alone gave.
 */
const { app, db } = setupApp();
let a: TestAccount;
let customFields: CustomField[];
let norway: { id: number; name: string };

beforeAll(async () => {
  a = await makeAccount(db, 'Unchanged');
  await db('custom_fields').insert([
    { user_id: a.id, field_name: 'plan', field_type: 'text' },
    { user_id: a.id, field_name: 'score', field_type: 'number' },
    { user_id: a.id, field_name: 'tier', field_type: 'text' },
  ]);
  customFields = (await db('custom_fields').where({ user_id: a.id }).orderBy('id').select('id', 'field_name', 'field_type')) as CustomField[];
  norway = await db('countries').where({ iso_code: 'NO' }).first('id', 'name');
});

const plan = () => String(customFields[0].id);
const score = () => String(customFields[1].id);
const tier = () => String(customFields[2].id);

function upload(typeId: number, csv: string) {
  return request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(typeId)).attach('file', Buffer.from(csv), 'contacts.csv');
}

async function lastImport() {
  const res = await api(app, a).get('/contacts/imports');
  return expectShape(importRecord, res.body.message.imports[0]);
}

/** Each contact's row version: any write changes it. */
async function versions(typeId: number): Promise<Map<string, string>> {
  const rows = (await db('contacts').where({ contact_type_id: typeId }).whereNull('deleted_at').select(db.raw('email, xmin::text AS v'))) as Array<{ email: string; v: string }>;
  return new Map(rows.map((r) => [r.email, r.v]));
}

/** The file's records as the import reads them (byte strings, with their plain/ascii flags). */
async function recordsOf(csv: string): Promise<Array<{ rec: string[]; plain: boolean; ascii: boolean; line: number }>> {
  const reader = new CsvRecordReader(1024 * 1024);
  reader.end(Buffer.from(csv, 'utf8'));
  const out: Array<{ rec: string[]; plain: boolean; ascii: boolean; line: number }> = [];
  for await (const b of reader as AsyncIterable<RecordBatch>) b.records.forEach((rec, k) => out.push({ rec, plain: b.plain[k], ascii: b.ascii[k], line: b.lines[k] }));
  return out;
}

/** The contact's side of each fingerprint, by address: PostgreSQL's COPY text after the id, as the import reads it. */
async function contactTexts(typeId: number, columns: string[]): Promise<Map<string, string>> {
  const client = (await db.client.acquireConnection()) as PoolClient;
  try {
    const chunks: Buffer[] = [];
    const stream = client.query(copyTo(COPY_TYPE_ADDRESSES(a.id, typeId, columns)));
    for await (const c of stream as AsyncIterable<Buffer>) chunks.push(c);
    const out = new Map<string, string>();
    for (const line of Buffer.concat(chunks).toString('latin1').split('\n').filter(Boolean)) {
      const text = line.slice(line.indexOf('\t') + 1);
      out.set(text.split('\t')[0], text);
    }
    return out;
  } finally {
    db.client.releaseConnection(client);
  }
}

const hash = (text: string) => {
  const out = new Int32Array(2);
  fingerprint(text, 0, text.length, out);
  return [...out];
};

describe('fingerprints: the row and its contact written alike exactly when nothing would change', () => {
  const HEADER = 'email,first_name,last_name,alt_email,country,city,plan,score';

  it('the same values (escapes, non-ASCII, a country by name, blanks the contact has blank) match; any difference does not', async () => {
    const type = await makeContactType(db, a);
    const contacts = [
      { email: 'same@x.test', first_name: 'Ann', last_name: 'Lee', alt_email: 'ann@alt.test', country_id: norway.id, city: 'Oslo', custom_fields: { [plan()]: 'gold', [score()]: '12.5' } },
      { email: 'blanks@x.test' },
      { email: 'escapes@x.test', first_name: 'back\\slash', last_name: 'tab\there', city: 'two\nlines', custom_fields: { [plan()]: 'quote "q" ünïcødé 🎉 \\ end' } },
      { email: 'plus@x.test', custom_fields: { [score()]: '5' } },
      { email: 'kept@x.test', first_name: 'Kim' },
      { email: 'case@x.test' },
      { email: 'number@x.test', custom_fields: { [score()]: 5 } },
      { email: 'control@x.test', first_name: 'bell\b' },
      { email: 'other@x.test', first_name: 'Old' },
      { email: 'extra@x.test', custom_fields: { [tier()]: 'vip' } },
    ];
    await makeContacts(db, a, type, contacts);
    const csv = [
      HEADER,
      `same@x.test,Ann,Lee,ann@alt.test,${norway.name.toUpperCase()},Oslo,gold,12.5`,
      'blanks@x.test,,,,,,,',
      'escapes@x.test,back\\slash,"tab\there",,,"two\nlines","quote ""q"" ünïcødé 🎉 \\ end",',
      'plus@x.test,,,,,,,+5',
      'kept@x.test,,,,,,,',
      'Case@x.test,,,,,,,',
      'number@x.test,,,,,,,5',
      'control@x.test,bell\b,,,,,,',
      'other@x.test,New,,,,,,',
      'extra@x.test,,,,,,,',
    ].join('\n');
    const [header, ...rows] = await recordsOf(csv);
    const map = mapHeader(header.rec, customFields);
    const columns = fingerprintColumns(map);
    expect(columns).toEqual(['email', 'alt_email', 'country_id', 'first_name', 'last_name', 'city', `custom_fields -> '${plan()}'`, `custom_fields -> '${score()}'`]);
    const theirs = await contactTexts(type, columns);
    const checker = new RowChecker(map, new Map([[norway.name.toLowerCase(), norway.id]]));
    const match: Record<string, boolean> = {};
    for (const { rec, plain, ascii } of rows) {
      expect(checker.check(rec, plain, ascii)).toBeUndefined();
      const mine = checker.fingerprintText();
      const contact = theirs.get(checker.email.toLowerCase())!;
      match[checker.email] = mine === contact;
      // A hash equal exactly when the texts are (for these).
      expect(hash(mine).join() === hash(contact).join()).toBe(mine === contact);
    }
    expect(match).toEqual({
      'same@x.test': true,
      'blanks@x.test': true,
      'escapes@x.test': true,
      'plus@x.test': true, // '+5' is stored as '5'
      'kept@x.test': false, // blank cells keep 'Kim': unchanged, but left to the merge to say
      'Case@x.test': false, // the address is spelled anew
      'number@x.test': false, // a JSON number becomes the string "5"
      'control@x.test': false, // PostgreSQL escapes a backspace, the row does not: the merge decides (unchanged)
      'other@x.test': false,
      'extra@x.test': true, // the contact's custom value of a field the file does not have
    });

    // The import agrees: what matched and what the merge found unchanged are unchanged, nothing of theirs rewritten.
    const before = await versions(type);
    expect((await upload(type, csv)).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 10, inserted: 0, updated: 3, unchanged: 7, skipped: 0 });
    const after = await versions(type);
    expect([...after].filter(([email, v]) => before.get(email.toLowerCase()) !== v).map(([email]) => email).sort()).toEqual(['Case@x.test', 'number@x.test', 'other@x.test']);
    const stored = await db('contacts').where({ contact_type_id: type }).whereIn('email', ['number@x.test', 'other@x.test', 'kept@x.test', 'escapes@x.test']).orderBy('email');
    expect(stored.map((c) => [c.email, c.first_name, c.custom_fields[score()] ?? null])).toEqual([
      ['escapes@x.test', 'back\\slash', null],
      ['kept@x.test', 'Kim', null],
      ['number@x.test', '', '5'],
      ['other@x.test', 'New', null],
    ]);
  });

  it('a file with the address alone: its spelling is the whole comparison', async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ email: 'only@x.test', first_name: 'Kept' }, { email: 'spelled@x.test' }]);
    const [header, ...rows] = await recordsOf('email\nonly@x.test\nSpelled@x.test\n');
    const map = mapHeader(header.rec, customFields);
    expect(fingerprintColumns(map)).toEqual(['email']);
    const theirs = await contactTexts(type, ['email']);
    const checker = new RowChecker(map, new Map());
    const texts = rows.map(({ rec, plain, ascii }) => (checker.check(rec, plain, ascii), [checker.fingerprintText(), theirs.get(checker.email.toLowerCase())]));
    expect(texts).toEqual([
      ['only@x.test', 'only@x.test'],
      ['Spelled@x.test', 'spelled@x.test'],
    ]);
  });
});

describe('rows taken as unchanged, and later rows of their address', () => {
  const setUp = async () => {
    const type = await makeContactType(db, a);
    await makeContacts(db, a, type, [{ email: 'p@x.test', first_name: 'P' }, { email: 'q@x.test', first_name: 'Q' }]);
    return type;
  };

  it('an unchanged row, then a row that changes the contact: the last row wins and counts once', async () => {
    const type = await setUp();
    expect((await upload(type, 'email,first_name\np@x.test,P\nq@x.test,Q\np@x.test,Later\n')).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 3, inserted: 0, updated: 1, unchanged: 1, skipped: 1 });
    const reasons = (await lastImport()).reasons as Array<{ row: number; reason: string }>;
    expect(reasons).toEqual([{ row: 2, reason: 'The email appears again further down the file; the last row was used.' }]);
    expect((await db('contacts').where({ contact_type_id: type, email: 'p@x.test' }).first()).first_name).toBe('Later');
  });

  it('a changing row, then a row with the contact as it is: nothing is written', async () => {
    const type = await setUp();
    const before = await versions(type);
    expect((await upload(type, 'email,first_name\np@x.test,Sooner\np@x.test,P\n')).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 2, inserted: 0, updated: 0, unchanged: 1, skipped: 1 });
    expect(await versions(type)).toEqual(before);
  });

  it('the same unchanged row twice: one unchanged, one skipped as a repeat', async () => {
    const type = await setUp();
    const before = await versions(type);
    expect((await upload(type, 'email,first_name\np@x.test,P\np@x.test,P\nq@x.test,Q\n')).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 3, inserted: 0, updated: 0, unchanged: 2, skipped: 1 });
    expect(await versions(type)).toEqual(before);
  });

  it('the same file again is neither staged nor merged; one changed row is', async () => {
    const type = await makeContactType(db, a);
    const file = (last: string) => ['email,first_name,city,plan', ...Array.from({ length: 30 }, (_, k) => `r${k}@x.test,F${k},Town,${k === 29 ? last : 'basic'}`)].join('\n');
    expect((await upload(type, file('basic'))).status).toBe(200);
    const staging = importSql.CREATE_STAGING as jest.Mock;
    const merge = importSql.MERGE_STAGED as jest.Mock;
    staging.mockClear();
    merge.mockClear();
    expect((await upload(type, file('basic'))).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 30, inserted: 0, updated: 0, unchanged: 30 });
    expect([staging.mock.calls.length, merge.mock.calls.length]).toEqual([0, 0]);
    expect((await upload(type, file('gold'))).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 30, inserted: 0, updated: 1, unchanged: 29 });
    expect([staging.mock.calls.length, merge.mock.calls.length]).toEqual([1, 1]);
  });

  it('unchanged rows beside new ones and changed ones in one file', async () => {
    const type = await setUp();
    expect((await upload(type, 'email,first_name\nnew@x.test,N\np@x.test,P\nq@x.test,Q2\n')).status).toBe(200);
    expect(await lastImport()).toMatchObject({ status: 'completed', rows_read: 3, inserted: 1, updated: 1, unchanged: 1, skipped: 0 });
  });

  it('a file without an email column into a list with contacts: refused as before, nothing written', async () => {
    const type = await setUp();
    const before = await versions(type);
    expectVal(await upload(type, 'name,city\nx,y\n'), { file: ['The file must have a header row with an email column.'] });
    expect(await versions(type)).toEqual(before);
  });
});

describe('RowRouter with fingerprints', () => {
  it('neither stages nor writes a row that changes nothing; stages a changed one and the later row of a skipped address', async () => {
    const rows = await recordsOf('email,first_name\na@x.test,A\nb@x.test,Changed\nc@x.test,C\nnew@x.test,N\nc@x.test,C2\n');
    const map = mapHeader(rows[0].rec, []);
    const set = new AddressSet(10).withFingerprints();
    ['a@x.test\tA', 'b@x.test\tB', 'c@x.test\tC'].forEach((text, i) => {
      const print = new Int32Array(2);
      fingerprint(text, 0, text.length, print);
      set.addContact(text.split('\t')[0], i + 1, print);
    });
    const staged = new PassThrough();
    const stagedText: Buffer[] = [];
    staged.on('data', (c: Buffer) => stagedText.push(c));
    const router = new RowRouter(set, { mode: 'direct', staged, printed: fingerprintColumns(map) }, { customFields: [], countries: new Map(), userId: 7, typeId: 9, importId: 11 });
    const direct: Buffer[] = [];
    router.on('data', (c: Buffer) => direct.push(c));
    const ended = new Promise((r) => router.on('end', r));
    router.end({ records: rows.map((r) => r.rec), lines: rows.map((r) => r.line), plain: rows.map((r) => r.plain), ascii: rows.map((r) => r.ascii) });
    await ended;
    expect(Buffer.concat(direct).toString('latin1')).toBe('7\t9\t11\tnew@x.test\t\\N\t\\N\tN\t\t\t\t\t\t\t\t{}\n');
    const stagedLines = Buffer.concat(stagedText).toString('latin1').split('\n').filter(Boolean).map((l) => l.split('\t').slice(0, 4).join(' '));
    // b changed (its contact 2); c's first row was unchanged, its later row is staged by address (no contact id).
    expect(stagedLines).toEqual(['3 2 b@x.test \\N', '6 \\N c@x.test \\N']);
    expect({ rows: router.rowsRead, direct: router.direct, staged: router.staged, unchanged: router.unchanged }).toEqual({ rows: 5, direct: 1, staged: 2, unchanged: 1 });
  });

  it('compares nothing when the header differs from the columns the fingerprints were made of', async () => {
    const rows = await recordsOf('email,first_name\na@x.test,A\n');
    const set = new AddressSet(10).withFingerprints();
    const print = new Int32Array(2);
    fingerprint('a@x.test\tA', 0, 10, print);
    set.addContact('a@x.test', 1, print);
    const staged = new PassThrough();
    staged.resume();
    const router = new RowRouter(set, { mode: 'direct', staged, printed: ['email', 'last_name'] }, { customFields: [], countries: new Map(), userId: 7, typeId: 9, importId: 11 });
    router.resume();
    const ended = new Promise((r) => router.on('end', r));
    router.end({ records: rows.map((r) => r.rec), lines: rows.map((r) => r.line), plain: rows.map((r) => r.plain), ascii: rows.map((r) => r.ascii) });
    await ended;
    expect({ staged: router.staged, unchanged: router.unchanged }).toEqual({ staged: 1, unchanged: 0 });
  });
});

describe('AddressSet with fingerprints', () => {
  it('keeps each contact its fingerprint as it grows, answers it once, and keeps the unchanged marks through growth', () => {
    const set = new AddressSet(10).withFingerprints();
    const N = 5000;
    for (let i = 1; i <= N; i += 1) set.addContact(`c${i}@x.test`, i, Int32Array.of(i * 7, -i));
    for (let i = 1; i <= N; i += 1) {
      const v = set.visit(`C${i}@X.test`, i + 1);
      expect([v.contactId, v.printed, v.print[0], v.print[1], v.previousRow]).toEqual([i, true, i * 7, -i, 0]);
      if (i % 2 === 0) set.markUnchanged();
    }
    // New addresses grow the set (twice over); the marks move with their addresses.
    for (let i = 1; i <= 3 * N; i += 1) {
      const v = set.visit(`n${i}@x.test`, 2 * N + i);
      expect([v.contactId, v.printed, v.previousRow]).toEqual([0, false, 0]);
    }
    expect(set.count).toBe(4 * N);
    // Named again: no contact id, no fingerprint, and whether the earlier row was taken as unchanged.
    for (let i = 1; i <= N; i += 1) {
      const v = set.visit(`c${i}@x.test`, 6 * N + i);
      expect([v.contactId, v.printed, v.previousRow, v.previousUnchanged]).toEqual([0, false, i + 1, i % 2 === 0]);
    }
    // A mark is about the row that was taken as unchanged: the row after it was not.
    expect(set.visit('c2@x.test', 8 * N).previousUnchanged).toBe(false);
  });
});
