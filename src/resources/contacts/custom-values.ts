import type { Knex } from 'knex';
import type { Ctx } from '../../context';

export interface CustomField {
  id: number;
  field_name: string;
  field_type: 'text' | 'number' | 'datetime-local';
}

export function customFieldsQuery(ctx: Ctx): Knex.QueryBuilder {
  return ctx.db('custom_fields').where({ user_id: ctx.userId }).orderBy('id').select('id', 'field_name', 'field_type');
}

/** The account's custom fields, oldest first (their order in records and CSV columns). */
export async function loadCustomFields(ctx: Ctx): Promise<CustomField[]> {
  return (await customFieldsQuery(ctx)) as CustomField[];
}

export const CUSTOM_TEXT_MAX = 1000;
const NUMBER = /^[+-]?(?:\d+(?:\.\d+)?|\.\d+)$/;
/** HTML's datetime-local: `YYYY-MM-DDTHH:MM`, seconds optional. */
const DATETIME_LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

function isRealDateTime(v: string): boolean {
  const m = DATETIME_LOCAL.exec(v);
  if (!m) return false;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s || 0));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d && h < 24 && mi < 60 && (s || 0) < 60;
}

/**
 * Validates one custom value by its field's type and returns it as stored (numbers
 * normalised, datetimes as `YYYY-MM-DDTHH:MM[:SS]`), or the Laravel-style message.
 * Stored values are strings; segments compare numbers with a cast and datetimes as text
 * (the fixed format sorts chronologically).
 */
/** A field's name in a message (Laravel's display rule); computed only for a message, the CSV import checks millions of values. */
const displayName = (field: CustomField) => field.field_name.replace(/_/g, ' ');

export function checkCustomValue(field: CustomField, raw: string): { value: string } | { error: string } {
  const v = raw.trim();
  switch (field.field_type) {
    case 'number':
      if (!NUMBER.test(v) || (v.length > 30 && v.replace(/[^0-9]/g, '').length > 30)) return { error: `The ${displayName(field)} must be a number.` };
      return { value: v.charCodeAt(0) === 43 ? v.slice(1) : v };
    case 'datetime-local':
      if (!isRealDateTime(v)) return { error: `The ${displayName(field)} does not match the format Y-m-d\\TH:i.` };
      return { value: v };
    default:
      if (v.length > CUSTOM_TEXT_MAX) return { error: `The ${displayName(field)} must not be greater than ${CUSTOM_TEXT_MAX} characters.` };
      return { value: v };
  }
}

/** `custom_field` of a record: null when the account has no custom fields, else every field. */
export function serializeCustomFields(
  fields: CustomField[],
  stored: Record<string, string> | null,
): Record<string, { field_name: string; field_value: string | null }> | null {
  if (fields.length === 0) return null;
  const out: Record<string, { field_name: string; field_value: string | null }> = {};
  for (const f of fields) out[f.field_name] = { field_name: f.field_name, field_value: stored?.[String(f.id)] ?? null };
  return out;
}
