import type { Ctx } from '../../context';
import { loadCustomFields } from './custom-values';
import { RESERVED_COLUMNS } from '../../contacts/columns';


const EXAMPLE: Record<string, string> = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  email: 'ada@example.com',
  alt_email: 'ada.lovelace@example.org',
  country: 'United Kingdom',
  state: 'England',
  city: 'London',
  address_line1: '12 St James’s Square',
  address_line2: '',
  state_province_region: 'Greater London',
  postal_code: 'SW1Y 4JH',
};

const EXAMPLE_BY_TYPE: Record<string, string> = { text: 'example', number: '42', 'datetime-local': '2026-01-31T09:30' };

function csvCell(v: string): string {
  return /[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** The sample import file: every column Herald reads (reserved + the account's custom fields) and one example row. */
export async function sampleCsv(ctx: Ctx): Promise<string> {
  const custom = await loadCustomFields(ctx);
  const header = [...RESERVED_COLUMNS, ...custom.map((f) => f.field_name)];
  const row = [...RESERVED_COLUMNS.map((c) => EXAMPLE[c]), ...custom.map((f) => EXAMPLE_BY_TYPE[f.field_type])];
  return `${header.map(csvCell).join(',')}\r\n${row.map(csvCell).join(',')}\r\n`;
}
