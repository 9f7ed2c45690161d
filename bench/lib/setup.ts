import type { client as makeClient } from './herald';

type Api = ReturnType<typeof makeClient>;

/** Adds a contact type over HTTP and returns its id. */
export async function addContactType(api: Api, name: string): Promise<number> {
  await api.form('/contacts-type/add', { name });
  const res = (await api.get('/contacts-type')) as { message: { contactTypes: Array<{ id: number; name: string }> } };
  const found = res.message.contactTypes.find((t) => t.name === name);
  if (!found) throw new Error(`contact type ${name} not listed after adding it`);
  return found.id;
}

/** Adds custom fields over HTTP and returns every field id (reserved and custom) by name. */
export async function addCustomFields(api: Api, fields: Array<[name: string, type: 'text' | 'number' | 'datetime-local']>): Promise<Record<string, number>> {
  for (const [field_name, field_type] of fields) await api.form('/custom-fields/save', { field_name, field_type });
  const custom = (await api.get('/custom-fields')) as { message: { customFields: Array<{ id: number; field_name: string }> } };
  const reserved = (await api.get('/reserve-fields')) as { message: { reservedFields: Array<{ id: number; field_name: string }> } };
  return Object.fromEntries([...reserved.message.reservedFields, ...custom.message.customFields].map((f) => [f.field_name, f.id]));
}

/** `--name value`, `--name=value` (the value may hold `=` itself) and `--flag` arguments. */
export function args(argv = process.argv.slice(2)): Map<string, string | true> {
  const out = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i += 1) {
    const a = argv[i];
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    const [k, v] = eq < 0 ? [a.slice(2), undefined] : [a.slice(2, eq), a.slice(eq + 1)];
    if (v !== undefined) out.set(k, v);
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) out.set(k, argv[++i]);
    else out.set(k, true);
  }
  return out;
}
