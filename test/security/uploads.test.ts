import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType } from '../helpers/fixtures';
import { digest } from './lib/snapshot';

/**
 * Hostile uploads to /contacts/upload-csv: a wrong extension, binary content under a .csv
 * name, a line of more than 1 MB (a zip-bomb-like row that would otherwise be buffered
 * whole), a file over IMPORT_MAX_BYTES. Each gets a clear VAL (422) or 413 envelope, imports
 * nothing, and leaves no temporary file behind in DATA_DIR/uploads.
 */
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-uploads-'));
const uploads = path.join(dataDir, 'uploads');
const MB = 1024 * 1024;
const { app, db } = setupApp({ DATA_DIR: dataDir });
const tiny = setupApp({ DATA_DIR: dataDir, IMPORT_MAX_BYTES: '2048' });

afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

let a: TestAccount;
let list: number;
beforeAll(async () => {
  a = await makeAccount(db, 'Uploads');
  list = await makeContactType(db, a);
});

const csv = (rows: number, start = 0) =>
  `email,first_name\n${Array.from({ length: rows }, (_, i) => `person${start + i}@example.com,Person ${start + i}`).join('\n')}\n`;

function upload(body: Buffer | string, filename: string, target = app, account = a, typeId = list): request.Test {
  return request(target)
    .post('/contacts/upload-csv')
    .set(account.headers)
    .field('contact_type_id', String(typeId))
    .attach('file', Buffer.isBuffer(body) ? body : Buffer.from(body), { filename, contentType: 'text/csv' });
}

async function contactCount(account = a): Promise<number> {
  const row = await db('contacts').where({ user_id: account.id }).whereNull('deleted_at').count<{ n: number }[]>({ n: '*' }).first();
  return Number(row?.n ?? 0);
}

/** Temporary upload files still on disk (cleanup runs when the response closes; give it a moment). */
async function leftovers(): Promise<string[]> {
  for (let i = 0; i < 50; i += 1) {
    const files = fs.existsSync(uploads) ? fs.readdirSync(uploads) : [];
    if (files.length === 0) return [];
    await new Promise((r) => setTimeout(r, 20));
  }
  return fs.readdirSync(uploads);
}

/** Import staging tables of the account's imports that survived (a failed import must drop or roll back its table). */
async function stagingTables(account = a): Promise<string[]> {
  const ids = (await db('contact_imports').where({ user_id: account.id }).pluck('id')) as number[];
  if (!ids.length) return [];
  const { rows } = (await db.raw(`SELECT tablename FROM pg_tables WHERE tablename = ANY(?)`, [ids.map((id) => `contact_import_${id}`)])) as {
    rows: Array<{ tablename: string }>;
  };
  return rows.map((r) => r.tablename);
}

/** The refusal, and everything a refusal must leave as it was. */
async function expectRefused(send: () => request.Test, status: 413 | 422, fileMessage?: RegExp, account = a): Promise<request.Response> {
  const contacts = await contactCount(account);
  const before = await digest(db, account.id);
  const res = await send();
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.status).toBe('failed');
  if (status === 422) {
    expect(Object.keys(res.body.errors)).toEqual(['file']);
    expect(res.body.errors.file).toHaveLength(1);
    if (fileMessage) expect(res.body.errors.file[0]).toMatch(fileMessage);
  } else {
    expect(typeof res.body.errors).toBe('string');
    expect(res.body.errors).toMatch(/too large|greater than/i);
  }
  expect(await contactCount(account)).toBe(contacts);
  const after = await digest(db, account.id);
  // An import that got as far as reading rows is recorded as failed; nothing else changes.
  expect({ ...after, contact_imports: undefined }).toEqual({ ...before, contact_imports: undefined });
  expect(await leftovers()).toEqual([]);
  expect(await stagingTables(account)).toEqual([]);
  return res;
}

describe('control', () => {
  it('a real CSV imports, and its temporary file is gone afterwards', async () => {
    const before = await contactCount();
    const res = await upload(csv(3), 'people.csv');
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', message: 'Imported Successfully' } });
    expect(await contactCount()).toBe(before + 3);
    expect(fs.existsSync(uploads)).toBe(true);
    expect(await leftovers()).toEqual([]);
  });
});

describe('wrong extension', () => {
  it.each(['people.txt', 'people.xlsx', 'people', 'people.csv.exe', 'people.csv ', '.csvpeople', 'csv'])('%j: VAL on file', async (name) => {
    await expectRefused(() => upload(csv(2, 100), name), 422, /^The file must be a file of type: csv\.$/);
  });
});

describe('binary content under a .csv name', () => {
  const zipHeader = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00]);
  const cases: Array<[string, Buffer]> = [
    ['a zip (xlsx) file', Buffer.concat([zipHeader, Buffer.from('email\nx@example.com\n')])],
    ['a gzip file', Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0x4b, 0x4c])],
    ['a PDF', Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\nemail\n')],
    ['a PNG', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d])],
    ['an old Office file', Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])],
    ['text with NUL bytes (UTF-16)', Buffer.from('email,first_name\nnul@example.com,Nul\n', 'utf16le')],
    ['random bytes', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256))],
  ];
  it.each(cases)('%s: VAL on file', async (_name, body) => {
    await expectRefused(() => upload(body, 'people.csv'), 422, /^The file must be a file of type: csv\.$/);
  });
});

describe('a line of more than 1 MB', () => {
  it('a huge single line without a newline (no header end): VAL, not buffered whole', async () => {
    await expectRefused(() => upload(`email,${'x'.repeat(1.5 * MB)}`, 'huge.csv'), 422, /line longer than 1024 kilobytes/);
  });

  it('a huge row after a good header and good rows: VAL, and the good rows are not imported either', async () => {
    const body = `${csv(5, 200)}huge@example.com,${'y'.repeat(1.2 * MB)}\n${csv(2, 300).split('\n').slice(1).join('\n')}`;
    await expectRefused(() => upload(body, 'huge.csv'), 422, /line longer than 1024 kilobytes \(line \d+\)/);
  });

  it('an unclosed quote that swallows the rest of the file: VAL', async () => {
    const body = `email,first_name\nq@example.com,"never closed\n${'z,'.repeat(0.6 * MB)}\n`;
    await expectRefused(() => upload(body, 'quote.csv'), 422, /line longer than|not a valid CSV/);
  });

  it('the refused imports are listed as failed, never as completed', async () => {
    const res = await api(app, a).get('/contacts/imports');
    const imports = res.body.message.imports as Array<{ status: string; file_name: string; inserted: number }>;
    expect(imports.filter((i) => i.file_name !== 'people.csv').map((i) => i.status)).toEqual(imports.filter((i) => i.file_name !== 'people.csv').map(() => 'failed'));
    expect(imports.filter((i) => i.status === 'failed').every((i) => i.inserted === 0)).toBe(true);
  });
});

describe('a file over IMPORT_MAX_BYTES', () => {
  let b: TestAccount;
  let listB: number;
  beforeAll(async () => {
    b = await makeAccount(tiny.db, 'Tiny');
    listB = await makeContactType(tiny.db, b);
  });

  it('just under the limit imports (control)', async () => {
    const body = csv(40).slice(0, 2000);
    const res = await upload(body.slice(0, body.lastIndexOf('\n') + 1), 'small.csv', tiny.app, b, listB);
    expect(res.status).toBe(200);
  });

  it('a little over (read until the limit, then cut): 413', async () => {
    const body = csv(200, 1000);
    expect(body.length).toBeGreaterThan(2048);
    expect(body.length).toBeLessThan(2048 + 1024 * 1024);
    await expectRefused(() => upload(body, 'big.csv', tiny.app, b, listB), 413, undefined, b);
  });

  it('far over (refused from Content-Length before reading): 413', async () => {
    await expectRefused(() => upload(csv(60_000, 5000), 'bigger.csv', tiny.app, b, listB), 413, undefined, b);
  });
});

describe('other malformed uploads', () => {
  it('two files, or a file under another field name: VAL, nothing left behind', async () => {
    const two = () =>
      request(app)
        .post('/contacts/upload-csv')
        .set(a.headers)
        .field('contact_type_id', String(list))
        .attach('file', Buffer.from(csv(1, 400)), 'one.csv')
        .attach('file', Buffer.from(csv(1, 500)), 'two.csv');
    const contacts = await contactCount();
    const res = await two();
    expect(res.status).toBe(422);
    expect(res.body.status).toBe('failed');
    const other = await request(app)
      .post('/contacts/upload-csv')
      .set(a.headers)
      .field('contact_type_id', String(list))
      .attach('attachment', Buffer.from(csv(1, 600)), 'one.csv');
    expect(other.status).toBe(422);
    expect(other.body.status).toBe('failed');
    expect(await contactCount()).toBe(contacts);
    expect(await leftovers()).toEqual([]);
  });

  it('no file at all: VAL on file', async () => {
    const res = await api(app, a).form('/contacts/upload-csv', { contact_type_id: list });
    expect(res.status).toBe(422);
    expect(res.body.errors.file).toEqual(['The file field is required.']);
  });
});
