import { invalid } from '../../http/errors';
import { EMAIL_PATTERN, isEmail } from '../../http/fields';
import { bytesOf, isAscii, textOf, trimBytes } from './byte-strings';
import { checkCustomValue, type CustomField } from './custom-values';
import { TEXT_COLUMNS } from '../../contacts/columns';

/**
 * The row checks of the CSV import: which column is which (by header), and whether a record
 * may become a contact — if so as a line of COPY's text format, else the reason it is
 * skipped. Records are byte strings (byte-strings.ts) and so are the lines. No database
 * access here; row-router.ts decides where each line goes.
 */

type TextColumn = (typeof TEXT_COLUMNS)[number];

const TEXT_MAX = 255;
const NULL = '\\N';

/**
 * The email rule for an all-ASCII address: EMAIL_PATTERN with its Unicode classes narrowed
 * to their ASCII members and without the `u` flag (the same answer for ASCII text, in about
 * half the time). Other addresses go through isEmail.
 */
const ASCII_EMAIL = new RegExp(EMAIL_PATTERN.source.replace(/\\p\{L\}/g, 'A-Za-z').replace(/\\p\{N\}/g, '0-9'));
const validEmail = (email: string, ascii: boolean) => (ascii ? ASCII_EMAIL.test(email) : isEmail(textOf(email)));

export interface ColumnMap {
  email: number;
  altEmail: number;
  country: number;
  text: Array<[TextColumn, number]>;
  custom: Array<[CustomField, number]>;
  ignored: string[];
}

export const NO_EMAIL_COLUMN = () => invalid({ file: ['The file must have a header row with an email column.'] });

const headerKey = (h: string) => h.trim().toLowerCase().replace(/[\s-]+/g, '_');

/** Matches header cells to fields (case-insensitive, spaces = underscores); the first of two equal names counts. */
export function mapHeader(header: string[], customFields: CustomField[]): ColumnMap {
  const map: ColumnMap = { email: -1, altEmail: -1, country: -1, text: [], custom: [], ignored: [] };
  const customByName = new Map(customFields.map((f) => [f.field_name.toLowerCase(), f]));
  const seen = new Set<string>();
  header.forEach((cell, i) => {
    const raw = textOf(cell);
    const key = headerKey(raw);
    if (!key || seen.has(key)) {
      if (key) map.ignored.push(raw);
      return;
    }
    seen.add(key);
    if (key === 'email' || key === 'email_address') map.email = i;
    else if (key === 'alt_email') map.altEmail = i;
    else if (key === 'country' || key === 'country_id') map.country = i;
    else if ((TEXT_COLUMNS as readonly string[]).includes(key)) map.text.push([key as TextColumn, i]);
    else if (customByName.has(key)) map.custom.push([customByName.get(key)!, i]);
    else map.ignored.push(raw);
  });
  if (map.email < 0) throw NO_EMAIL_COLUMN();
  return map;
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
/** A value in COPY's text format. */
function copyValue(v: string): string {
  return v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]);
}

/**
 * Checks records one at a time; the last record that passed is kept in the fields below,
 * already in COPY's text format, until the next check (one set of strings per row, no
 * object per row).
 */
export class RowChecker {
  /** The address as written (trimmed). */
  email = '';
  private altEmail = NULL;
  private countryId = NULL;
  /** Per TEXT_COLUMNS entry: the trimmed value, '' when blank or absent. */
  private readonly text: string[] = TEXT_COLUMNS.map(() => '');
  /** The custom values as a JSON object keyed by field id ('' when none). */
  private custom = '';
  /** Per custom column (header order): the value's JSON text, '' when blank. */
  private readonly customJson: string[];
  /** Record index of each TEXT_COLUMNS entry, or -1. */
  private readonly textIndex: number[];
  private readonly customIndex: Array<{ field: CustomField; i: number; key: string }>;

  constructor(
    private readonly columns: ColumnMap,
    private readonly countries: Map<string, number>,
  ) {
    this.textIndex = TEXT_COLUMNS.map((name) => columns.text.find(([n]) => n === name)?.[1] ?? -1);
    this.customIndex = columns.custom.map(([field, i]) => ({ field, i, key: `${JSON.stringify(String(field.id))}:` }));
    this.customJson = columns.custom.map(() => '');
  }

  /**
   * Checks one record in the order the reasons are documented: email, alt email, country,
   * text columns, custom values in header order, NUL characters. Returns the reason to skip
   * it, or undefined when it passed. `plain`: no field needs COPY escaping; `ascii`: no byte
   * is beyond ASCII (RecordBatch).
   */
  check(rec: string[], plain: boolean, ascii: boolean): string | undefined {
    const c = this.columns;
    const email = trimBytes(rec[c.email] ?? '');
    if (!email) return 'The email field is required.';
    if (!validEmail(email, ascii)) return `The email must be a valid email address (${JSON.stringify(textOf(email).slice(0, 100))}).`;
    this.email = email;
    this.altEmail = NULL;
    if (c.altEmail >= 0) {
      const v = trimBytes(rec[c.altEmail] ?? '');
      if (v && !validEmail(v, ascii)) return 'The alt email must be a valid email address.';
      if (v) this.altEmail = v;
    }
    this.countryId = NULL;
    if (c.country >= 0) {
      const v = trimBytes(rec[c.country] ?? '');
      if (v) {
        const found = this.countries.get((ascii ? v : textOf(v)).toLowerCase());
        if (found === undefined) return `The selected country is invalid (${JSON.stringify(textOf(v).slice(0, 100))}).`;
        this.countryId = String(found);
      }
    }
    const tooLong = this.readText(rec, plain);
    if (tooLong) return tooLong;
    const customError = this.readCustom(rec, ascii);
    if (customError) return customError;
    if (!plain && rec.some((v) => v.includes('\u0000'))) return 'The row contains a NUL character.';
    return undefined;
  }

  private readText(rec: string[], plain: boolean): string | undefined {
    for (let k = 0; k < TEXT_COLUMNS.length; k += 1) {
      const i = this.textIndex[k];
      const v = i < 0 ? '' : trimBytes(rec[i] ?? '');
      // A byte string is at least as long as its text: only a long one is decoded to count.
      if (v.length > TEXT_MAX && textOf(v).length > TEXT_MAX) return `The ${TEXT_COLUMNS[k].replace(/_/g, ' ')} must not be greater than ${TEXT_MAX} characters.`;
      this.text[k] = plain || v === '' ? v : copyValue(v);
    }
    return undefined;
  }

  private readCustom(rec: string[], asciiRecord: boolean): string | undefined {
    let custom = '';
    for (let j = 0; j < this.customIndex.length; j += 1) {
      const { field, i, key } = this.customIndex[j];
      const v = trimBytes(rec[i] ?? '');
      this.customJson[j] = '';
      if (!v) continue;
      const ascii = asciiRecord || isAscii(v);
      const checked = checkCustomValue(field, ascii ? v : textOf(v));
      if ('error' in checked) return checked.error;
      const json = JSON.stringify(ascii ? checked.value : bytesOf(checked.value));
      this.customJson[j] = json;
      custom += `${custom ? ',' : '{'}${key}${json}`;
    }
    // JSON escapes ("\"", "\u0001") carry backslashes, which COPY's text format escapes again.
    this.custom = custom && (custom.includes('\\') ? copyValue(`${custom}}`) : `${custom}}`);
    return undefined;
  }

  /**
   * The checked row as a line for COPY straight into contacts (CONTACT_COPY_COLUMNS after
   * `prefix`, the user and type): blank text cells '', no custom values '{}', as a new
   * contact is stored.
   */
  contactLine(prefix: string): string {
    let out = `${prefix}${this.email}\t${this.altEmail}\t${this.countryId}`;
    for (const v of this.text) out += `\t${v}`;
    return `${out}\t${this.custom || '{}'}\n`;
  }

  /**
   * What the checked row would set on an existing contact, in the file's columns, as the
   * contact's side of its fingerprint is written (contact-fingerprint.ts: COPY's text format,
   * tab-separated, fingerprintColumns' order): blank text cells '' and blank alt email,
   * country and custom values NULL, which is what a contact holds there when blank. The
   * address needs no escaping: the email rule admits no backslash, tab or line break.
   */
  fingerprintText(): string {
    const c = this.columns;
    let out = this.email;
    if (c.altEmail >= 0) out += `\t${this.altEmail}`;
    if (c.country >= 0) out += `\t${this.countryId}`;
    for (let k = 0; k < TEXT_COLUMNS.length; k += 1) if (this.textIndex[k] >= 0) out += `\t${this.text[k]}`;
    for (const json of this.customJson) out += json === '' ? `\t${NULL}` : `\t${json.includes('\\') ? copyValue(json) : json}`;
    return out;
  }

  /**
   * The checked row as a line for the staging table (STAGING_COLUMNS): its CSV line, the
   * contact it matched when known (else NULL), blank cells NULL so that the merge keeps what
   * a matched contact has there.
   */
  stagedLine(row: number, contactId: number): string {
    let out = `${row}\t${contactId > 0 ? contactId : NULL}\t${this.email}\t${this.altEmail}\t${this.countryId}`;
    for (const v of this.text) out += v ? `\t${v}` : `\t${NULL}`;
    return `${out}\t${this.custom || NULL}\n`;
  }
}
