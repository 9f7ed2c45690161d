import { TEXT_COLUMNS } from '../../contacts/columns';
import type { ColumnMap } from './csv-rows';

/**
 * Fingerprints of what a CSV row would set on its contact, so that a re-import of an unchanged
 * file (a monthly CRM export) can tell, while it reads, which rows would change nothing, and
 * neither stage nor merge them (docs/decisions.md, "The import skips unchanged rows").
 *
 * Both sides are written in COPY's text format and hashed alike:
 *
 * - the contact: `COPY (SELECT id, <fingerprintColumns>) TO STDOUT` — each line after its id is
 *   the contact's values of the file's columns, tab-separated, escaped by PostgreSQL, `\N` for
 *   NULL; custom values as their JSON text (`custom_fields -> 'id'`);
 * - the row: RowChecker.fingerprintText, the same columns from the checked row, blank cells as
 *   the contact holds them when blank (text '', alt email, country and custom values `\N`).
 *
 * Equal texts mean equal values in every column the file has (COPY's escaping is one-to-one,
 * and a row's text decodes to the row's values), and a blank cell keeps the contact's value,
 * so such a row changes nothing (csv-import.sql.ts, KNOWN_CONTACT). Where the two spellings of
 * a value could differ (PostgreSQL escapes a backspace, the row does not; a contact's custom
 * value stored as a JSON number), the texts differ and the row is merged as before: a false
 * "changed" costs time, never a wrong contact. What can make a changed row look unchanged is a
 * collision of the 64-bit hash of two texts of the same contact: about one in 2⁶⁴ per row.
 */

/** The SELECT list whose COPY text is a contact's side, after its `id` (alias-free; `contacts`). */
export function fingerprintColumns(columns: ColumnMap): string[] {
  const out = ['email'];
  if (columns.altEmail >= 0) out.push('alt_email');
  if (columns.country >= 0) out.push('country_id');
  for (const name of TEXT_COLUMNS) if (columns.text.some(([n]) => n === name)) out.push(name);
  for (const [field] of columns.custom) out.push(`custom_fields -> '${Number(field.id)}'`);
  return out;
}

/**
 * A 64-bit hash of `text[start, end)` (byte strings: one character a byte), as two 32-bit
 * lanes written to `out[0]`, `out[1]`: two multiply–xor lanes over the characters with a
 * final avalanche that mixes each into the other (cyrb53's construction, both lanes kept).
 */
export function fingerprint(text: string, start: number, end: number, out: Int32Array): void {
  let h1 = 0x9e3779b9 ^ (end - start);
  let h2 = 0x7f4a7c15;
  for (let i = start; i < end; i += 1) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  out[0] = h1;
  out[1] = h2;
}
