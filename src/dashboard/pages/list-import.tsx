import { randomBytes } from 'node:crypto';
import { requestActor } from '../../consent/actor';
import fs from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { Request, Response } from 'express';
import { RESERVED_COLUMNS } from '../../contacts/columns';
import { AppError, notFound1, type FieldErrors } from '../../http/errors';
import { validate } from '../../http/validate';
import { textOf } from '../../resources/contacts/byte-strings';
import { importContactsCsv, MAX_LINE_CHARS } from '../../resources/contacts/csv-import.service';
import { CsvRecordReader, type CsvDelimiter, type RecordBatch } from '../../resources/contacts/csv-records';
import { mapHeader, type ColumnMap } from '../../resources/contacts/csv-rows';
import { sniffCsv, toUtf8 } from '../../resources/contacts/csv-sniff';
import { loadCustomFields, type CustomField } from '../../resources/contacts/custom-values';
import { Section } from '../components';
import { ErrorSummary, Field, FORM_ERROR, type Choice, type FormState } from '../form-kit';
import { Csrf, Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { uploadBody } from '../upload';
import { ImportProgress } from './contacts';
import { findList, listPage, pathId, type ListRow } from './lists';
import { auditAction } from '../permissions';

/**
 * The CSV import's mapping step: the file is uploaded and kept aside (uploads/mapping/<account>/,
 * a random name), then a page shows its header against Herald's fields — a select per column,
 * with the first rows' values — and the delimiter it was read with (`,`, `;` or tab). Importing
 * runs the API's import (csv-import.service.ts) with that mapping in place of the header row.
 * A kept file is removed once imported, and any left over after a day when the account uploads again.
 */
const KEEP_MS = 24 * 60 * 60 * 1000;
const PREVIEW_ROWS = 5;
const PREVIEW_BYTES = 64 * 1024;
const TOKEN = /^[0-9a-f]{32}$/;

const DELIMITERS: Array<{ value: string; label: string; delimiter: CsvDelimiter }> = [
  { value: 'comma', label: 'Comma (,)', delimiter: ',' },
  { value: 'semicolon', label: 'Semicolon (;)', delimiter: ';' },
  { value: 'tab', label: 'Tab', delimiter: '\t' },
];
const delimiterNamed = (v: unknown) => DELIMITERS.find((d) => d.value === v)?.delimiter;
const nameOf = (d: CsvDelimiter) => DELIMITERS.find((x) => x.delimiter === d)!.value;

interface Staged {
  dir: string;
  file: string;
  meta: string;
  fileName: string;
}

const accountDir = (p: PageContext) => path.join(p.deps.config.dataDir, 'uploads', 'mapping', String(p.ctx.userId));

/** A kept upload of this account for this list; anything else (another account's, a removed one, a bad token): not found. */
async function staged(p: PageContext, list: ListRow, token: string): Promise<Staged> {
  if (!TOKEN.test(token)) throw notFound1();
  const dir = accountDir(p);
  const file = path.join(dir, `${token}.csv`);
  const meta = path.join(dir, `${token}.json`);
  let saved: { file_name?: unknown; contact_type_id?: unknown };
  try {
    saved = JSON.parse(await fs.promises.readFile(meta, 'utf8')) as typeof saved;
    await fs.promises.access(file);
  } catch {
    throw notFound1();
  }
  if (saved.contact_type_id !== list.id || typeof saved.file_name !== 'string') throw notFound1();
  return { dir, file, meta, fileName: saved.file_name };
}

/** Kept uploads older than KEEP_MS (a mapping never finished). */
async function sweep(dir: string): Promise<void> {
  const names = await fs.promises.readdir(dir).catch(() => [] as string[]);
  const old = Date.now() - KEEP_MS;
  for (const name of names) {
    const full = path.join(dir, name);
    const stat = await fs.promises.stat(full).catch(() => undefined);
    if (stat && stat.mtimeMs < old) await fs.promises.rm(full, { force: true });
  }
}

/** POST /app/lists/:id/import: the upload checked as POST /contacts/upload-csv checks it, kept aside, then the mapping page. */
export async function uploadForMappingAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  try {
    const body = validate(uploadBody, { contact_type_id: list.id, file: req.file });
    // Not a CSV whatever its name (binary content): refused here, not on the mapping page.
    const handle = await open(body.file.path, 'r');
    try {
      await sniffCsv(handle, (await handle.stat()).size);
    } finally {
      await handle.close();
    }
    const dir = accountDir(p);
    await fs.promises.mkdir(dir, { recursive: true });
    await sweep(dir);
    const token = randomBytes(16).toString('hex');
    await fs.promises.rename(body.file.path, path.join(dir, `${token}.csv`));
    await fs.promises.writeFile(path.join(dir, `${token}.json`), JSON.stringify({ file_name: body.file.originalname, contact_type_id: list.id }));
    res.redirect(303, `/app/lists/${list.id}/import/${token}`);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    await listPage(req, res, p, { status: err.status, state: { values: {}, errors: fieldErrors(err) } });
  }
}

/** A refusal's messages by field (one said as a sentence belongs to the form). */
const fieldErrors = (err: AppError): FieldErrors => (typeof err.errors === 'string' ? { [FORM_ERROR]: [err.errors] } : (err.errors as FieldErrors));

interface Preview {
  delimiter: CsvDelimiter;
  header: string[];
  rows: string[][];
}

/** The file's first lines, read as the import reads them (its encoding, the delimiter given or sniffed). */
async function preview(file: string, wanted?: CsvDelimiter): Promise<Preview> {
  const handle = await open(file, 'r');
  try {
    const size = (await handle.stat()).size;
    const sniffed = await sniffCsv(handle, size);
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(PREVIEW_BYTES), 0, PREVIEW_BYTES, 0);
    // A file longer than what was read: up to its last whole line.
    const end = bytesRead < size ? buffer.lastIndexOf(0x0a, bytesRead - 1) + 1 : bytesRead;
    const delimiter = wanted ?? sniffed.delimiter;
    const records: string[][] = [];
    try {
      const reader = Readable.from([buffer.subarray(0, end)])
        .pipe(toUtf8(sniffed.encoding, () => undefined))
        .pipe(new CsvRecordReader(MAX_LINE_CHARS, delimiter));
      for await (const batch of reader as AsyncIterable<RecordBatch>) {
        records.push(...batch.records);
        if (records.length > PREVIEW_ROWS) break;
      }
    } catch {
      // A line the reader refuses: the rows before it are the preview; the import says what is wrong.
    }
    const [header = [], ...rows] = records.map((r) => r.map(textOf));
    return { delimiter, header, rows: rows.slice(0, PREVIEW_ROWS) };
  } finally {
    await handle.close();
  }
}

/** Herald's fields a column may fill: the reserved ones, then the account's custom fields. */
function fieldChoices(custom: CustomField[]): Choice[] {
  return [
    { value: '', label: 'Skip this column' },
    ...RESERVED_COLUMNS.map((c) => ({ value: c, label: c === 'email' ? 'email (required)' : c })),
    ...custom.map((c) => ({ value: c.field_name, label: `${c.field_name} (custom, ${c.field_type})` })),
  ];
}

/** The columns as the import reads a header (csv-rows.ts mapHeader); one without an address still maps its other columns. */
function headerMap(header: string[], custom: CustomField[]): ColumnMap {
  try {
    return mapHeader(header, custom);
  } catch {
    // Refused for want of an address: an `email` cell past the last column is the address it wants.
    return mapHeader([...header, 'email'], custom);
  }
}

/** What each column fills when its header names a field (the mapping's first choices). */
function guessed(header: string[], custom: CustomField[]): Record<string, string> {
  const map = headerMap(header, custom);
  const out: Record<string, string> = {};
  const set = (i: number, name: string) => {
    if (i >= 0 && i < header.length) out[`column_${i}`] = name;
  };
  set(map.email, 'email');
  set(map.altEmail, 'alt_email');
  set(map.country, 'country');
  for (const [name, i] of map.text) set(i, name);
  for (const [field, i] of map.custom) set(i, field.field_name);
  return out;
}

async function sendMapping(res: Response, p: PageContext, list: ListRow, token: string, s: Staged, view: Preview, status: number, state: FormState): Promise<void> {
  const custom = await loadCustomFields(p.ctx);
  const choices = fieldChoices(custom);
  const base = `/app/lists/${list.id}/import/${token}`;
  const columns = view.header.map((name, i) => ({ name, i, examples: view.rows.map((r) => r[i] ?? '').filter((v) => v.trim() !== '') }));
  const delimiterState: FormState = { values: { delimiter: nameOf(view.delimiter) }, errors: {} };
  sendPage(
    res,
    status,
    <Layout title={`Import ${s.fileName}`} csrf={p.session.csrf} active="contacts" styles={['audience.css']} scripts={['audience.js']}>
      <p class="crumbs">
        <a href="/app/contacts">Contacts</a> › <a href={`/app/lists/${list.id}`}>{list.name}</a> › import
      </p>
      <h1>Import {s.fileName}</h1>
      <p>
        Into the list <strong>{list.name}</strong>. Choose which of Herald’s fields each column fills; the examples are the file’s first {PREVIEW_ROWS} rows.
      </p>
      <form method="get" action={base} class="search-row">
        <Field state={delimiterState} name="delimiter" label="Values are separated by" type="select" choices={DELIMITERS} />
        <button type="submit" class="secondary">
          Read again
        </button>
      </form>
      <form method="post" action={base} class="form" id="map-form" data-file-name={s.fileName} novalidate>
        <Csrf token={p.session.csrf} />
        <input type="hidden" name="delimiter" value={nameOf(view.delimiter)} />
        <ErrorSummary state={state} fields={columns.map((c) => `column_${c.i}`)} />
        {columns.length === 0 ? <p class="error">The file has no header row to map.</p> : null}
        <Section title="Columns" id="mapping">
          <ol class="mapping">
            {columns.map((c) => (
              <li data-column={String(c.i)}>
                <Field
                  state={state}
                  name={`column_${c.i}`}
                  label={`Column ${c.i + 1}: ${c.name.trim() || '(no name)'}`}
                  type="select"
                  choices={choices}
                  hint={c.examples.length ? `For example: ${c.examples.slice(0, 3).join(' · ')}` : 'Empty in the first rows.'}
                />
              </li>
            ))}
          </ol>
        </Section>
        <div class="actions">
          <button type="submit">Import</button>
          <a href={`/app/lists/${list.id}`}>Cancel</a>
        </div>
        <ImportProgress prefix="map" />
      </form>
      <Section title="The first rows" id="preview">
        <div class="table-box" role="region" aria-labelledby="table-preview" tabIndex={0}>
          <table class="data preview" data-table="preview">
            <caption id="table-preview">The file’s first {PREVIEW_ROWS} rows under its header</caption>
            <thead>
              <tr>
                {view.header.map((h) => (
                  <th scope="col">{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {view.rows.map((r) => (
                <tr>
                  {view.header.map((h, i) => (
                    <td data-label={h}>{r[i] ?? ''}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </Layout>,
  );
}

export async function mappingPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const token = String(req.params.token);
  const s = await staged(p, list, token);
  const view = await preview(s.file, delimiterNamed(req.query.delimiter));
  await sendMapping(res, p, list, token, s, view, 200, { values: guessed(view.header, await loadCustomFields(p.ctx)), errors: {} });
}

/** POST: the import with the chosen mapping and delimiter, through the API's import service; then the list with its result. */
export async function importMappedAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const token = String(req.params.token);
  const s = await staged(p, list, token);
  const body = (req.body ?? {}) as Record<string, unknown>;
  const delimiter = delimiterNamed(body.delimiter);
  const view = await preview(s.file, delimiter);
  const known = new Set(fieldChoices(await loadCustomFields(p.ctx)).map((c) => c.value));
  const header = view.header.map((_, i) => {
    const v = body[`column_${i}`];
    return typeof v === 'string' && known.has(v) ? v : '';
  });
  try {
    const outcome = await importContactsCsv(p.ctx, { contactTypeId: list.id, filePath: s.file, fileName: s.fileName, timeoutMs: p.deps.config.importTimeoutMs, delimiter: view.delimiter, header, actor: requestActor(req).actor });
    await auditAction(p, { action: 'contacts.imported', objectKind: 'contact_type', objectId: list.id, summary: `CSV import “${s.fileName}”: ${outcome.inserted} added, ${outcome.updated} updated, ${outcome.skipped} skipped` });
    await Promise.all([fs.promises.rm(s.file, { force: true }), fs.promises.rm(s.meta, { force: true })]);
    res.redirect(303, `/app/lists/${list.id}?imported=${outcome.id}`);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    const values = Object.fromEntries(header.map((v, i) => [`column_${i}`, v]));
    await sendMapping(res, p, list, token, s, view, err.status, { values, errors: fieldErrors(err) });
  }
}
