import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { importContactsCsv } from '../../src/resources/contacts/csv-import.service';
import { sniffDelimiter } from '../../src/resources/contacts/csv-sniff';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType } from '../helpers/fixtures';

/**
 * The import reads `;`- and tab-separated files as well as comma-separated ones (the delimiter
 * its header line uses), and takes a column mapping (the dashboard's mapping step) instead of
 * the file's header row, through the same service as POST /contacts/upload-csv.
 */
const { app, db, config } = setupApp();
let a: TestAccount;

beforeAll(async () => {
  a = await makeAccount(db, 'Delimiters');
  await db('custom_fields').insert({ user_id: a.id, field_name: 'plan', field_type: 'text' });
});

function upload(typeId: number, csv: string) {
  return request(app).post('/contacts/upload-csv').set(a.headers).field('contact_type_id', String(typeId)).attach('file', Buffer.from(csv), 'contacts.csv');
}

async function contactsOf(typeId: number) {
  const res = await api(app, a).get('/contacts/list');
  return (res.body.message.contacts as Array<Record<string, unknown>>)
    .filter((c) => c.contact_type_id === typeId)
    .map((c) => ({ email: c.email, first_name: c.first_name, last_name: c.last_name, plan: (c.custom_field as Record<string, { field_value: string }> | null)?.plan?.field_value ?? null }))
    .sort((x, y) => String(x.email).localeCompare(String(y.email)));
}

describe('sniffDelimiter', () => {
  it.each([
    ['email,first_name\n', ','],
    ['email;first_name;last_name\r\n', ';'],
    ['email\tfirst_name\n', '\t'],
    ['"a;b;c",email\n', ','],
    ['email;"x,y,z";first\n', ';'],
    ['email\n', ','],
    ['email,name;x\n', ','],
  ])('%j → %j', (text, want) => {
    expect(sniffDelimiter(text)).toBe(want);
  });
});

describe('the import', () => {
  it('reads a `;`-separated file with quoted fields', async () => {
    const type = await makeContactType(db, a, 'Semicolons');
    const csv = ['email;first_name;last_name;plan', 'ada@example.com;Ada;"Love;lace";gold', '"bob@example.com" ;Bob;;', ''].join('\r\n');
    const res = await upload(type, csv);
    expect(res.status).toBe(200);
    expect(await contactsOf(type)).toEqual([
      { email: 'ada@example.com', first_name: 'Ada', last_name: 'Love;lace', plan: 'gold' },
      { email: 'bob@example.com', first_name: 'Bob', last_name: '', plan: null },
    ]);
  });

  it('reads a tab-separated file; a tab after a closing quote is the delimiter, not a blank', async () => {
    const type = await makeContactType(db, a, 'Tabs');
    const csv = ['email\tfirst_name\tlast_name', '"cy@example.com"\t"Cy"\tBrown', 'di@example.com\tDi\t"Smith, Jr."', ''].join('\n');
    const res = await upload(type, csv);
    expect(res.status).toBe(200);
    expect(await contactsOf(type)).toEqual([
      { email: 'cy@example.com', first_name: 'Cy', last_name: 'Brown', plan: null },
      { email: 'di@example.com', first_name: 'Di', last_name: 'Smith, Jr.', plan: null },
    ]);
  });

  it('a comma-separated file is read as before', async () => {
    const type = await makeContactType(db, a, 'Commas');
    const res = await upload(type, 'email,first_name\nee@example.com,"E; e"\n');
    expect(res.status).toBe(200);
    expect(await contactsOf(type)).toEqual([{ email: 'ee@example.com', first_name: 'E; e', last_name: '', plan: null }]);
  });

  it('takes a column mapping instead of the header row, and a delimiter that overrides the sniffed one', async () => {
    const type = await makeContactType(db, a, 'Mapped');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-map-'));
    const file = path.join(dir, 'export.csv');
    // Headers Herald would not recognise; the mapping says what each column is and leaves one out.
    fs.writeFileSync(file, ['Adresse;Vorname;Notiz;Tarif', 'fa@example.com;Fa;ignore me;silver', 'ga@example.com;Ga;x;', ''].join('\n'));
    try {
      const ctx = { userId: a.id, db };
      const outcome = await importContactsCsv(ctx, { contactTypeId: type, filePath: file, fileName: 'export.csv', timeoutMs: config.importTimeoutMs, header: ['email', 'first_name', '', 'plan'] });
      expect(outcome).toMatchObject({ inserted: 2, skipped: 0, ignoredColumns: [] });
      expect(await contactsOf(type)).toEqual([
        { email: 'fa@example.com', first_name: 'Fa', last_name: '', plan: 'silver' },
        { email: 'ga@example.com', first_name: 'Ga', last_name: '', plan: null },
      ]);
      // Read with a delimiter the file does not use, each line is one column: no row has an address.
      const other = await importContactsCsv(ctx, { contactTypeId: type, filePath: file, fileName: 'export.csv', timeoutMs: config.importTimeoutMs, delimiter: '\t', header: ['first_name', 'email'] });
      expect(other).toMatchObject({ inserted: 0, updated: 0, skipped: 2 });
      // A mapping without an email column is refused as a header without one is.
      await expect(
        importContactsCsv(ctx, { contactTypeId: type, filePath: file, fileName: 'export.csv', timeoutMs: config.importTimeoutMs, header: ['', 'first_name'] }),
      ).rejects.toMatchObject({ status: 422, errors: { file: ['The file must have a header row with an email column.'] } });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
