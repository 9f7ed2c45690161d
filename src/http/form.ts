import { badRequest } from './errors';

/**
 * Request input normalisation, shared by every body and query string:
 * - array fields in any of the spellings clients use: `strIds[0]`, `strIds[]`, repeated
 *   keys, JSON arrays, and qs's object form once an index passes its array limit;
 * - strings trimmed and empty ones dropped, like Laravel's TrimStrings and
 *   ConvertEmptyStringsToNull (the spec's messages come from Laravel), except long design
 *   fields, which are kept byte for byte.
 */
const VERBATIM = new Set(['template_html', 'template_json', 'html_code', 'json_code', 'source']);
/** Objects keyed by name (custom field values): never folded into arrays, even for `123`. */
const MAPS = new Set(['custom_field']);
/**
 * Arrays whose positions pair up with another array's (a segment rule's `value[i]` belongs to
 * `select_field[i]`): empty entries are kept as '' so later entries keep their index.
 */
const POSITIONAL = new Set(['value']);

type Json = unknown;

/**
 * How deeply a body or query may nest objects and arrays. The deepest input of the spec is three
 * levels (`ab_variations[0][subject]`); 32 leaves room for any client's way of writing it and is
 * body-parser's own limit for urlencoded bodies (its default `depth`, whose error the error
 * handler words as this one), so every body type ends at the same depth. The limit also bounds
 * this file's recursion: 5,000 levels of JSON, which JSON.parse and multer's bracket keys build
 * without complaint, used to exhaust the stack (a 500).
 */
export const MAX_NESTING = 32;

/** The error for input past MAX_NESTING (the same for a JSON body, a form and a query string). */
export const tooDeep = () => badRequest(`The request nests objects or arrays more than ${MAX_NESTING} levels deep.`);

function isIndexObject(v: Record<string, unknown>): boolean {
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => /^\d+$/.test(k));
}

function normalizePositional(v: Json, depth: number): Json {
  const obj = v && typeof v === 'object' && !Array.isArray(v) ? foldBracketKeys(v as Record<string, unknown>) : v;
  const items =
    obj && typeof obj === 'object' && !Array.isArray(obj) && isIndexObject(obj as Record<string, unknown>)
      ? Object.keys(obj)
          .sort((a, b) => Number(a) - Number(b))
          .map((k) => (obj as Record<string, unknown>)[k])
      : obj;
  if (!Array.isArray(items)) return normalizeValue(items, depth, false);
  return items.map((x) => (typeof x === 'string' ? x.trim() : x === null || x === undefined ? '' : normalizeValue(x, depth + 1, false)));
}

/** `depth`: how many objects and arrays enclose `v` (the body itself is 0). */
function normalizeValue(v: Json, depth: number, verbatim: boolean, isMap = false, inMap = false, positional = false): Json {
  if (depth > MAX_NESTING) throw tooDeep();
  if (positional) return normalizePositional(v, depth);
  // Inside a name-keyed map (custom field values) an empty value means "clear this value":
  // '' and null (JSON) alike, as Laravel turns empty strings into null.
  if (inMap && v === null) return '';
  if (typeof v === 'string') {
    if (verbatim) return v === '' ? undefined : v;
    if (inMap) return v.trim();
    const t = v.trim();
    return t === '' ? undefined : t;
  }
  if (Array.isArray(v)) {
    return v.map((x) => normalizeValue(x, depth + 1, verbatim)).filter((x) => x !== undefined);
  }
  if (v && typeof v === 'object') {
    const obj = foldBracketKeys(v as Record<string, unknown>);
    if (!isMap && isIndexObject(obj)) {
      return Object.keys(obj)
        .sort((a, b) => Number(a) - Number(b))
        .map((k) => normalizeValue(obj[k], depth + 1, verbatim))
        .filter((x) => x !== undefined);
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(obj)) {
      // `__proto__` (an own key after JSON.parse or node's querystring) would replace the
      // object's prototype instead of adding a field: no field has that name, drop it.
      if (k === '__proto__') continue;
      const n = normalizeValue(x, depth + 1, VERBATIM.has(k), MAPS.has(k), isMap, POSITIONAL.has(k) && !isMap);
      if (n !== undefined) out[k] = n;
    }
    return out;
  }
  return v === null ? undefined : v;
}

/**
 * Parsers that do not understand brackets (node's querystring, JSON bodies written by
 * hand) leave keys like `strIds[0]` or `strIds[]`; fold them into arrays.
 */
function foldBracketKeys(obj: Record<string, unknown>): Record<string, unknown> {
  if (!Object.keys(obj).some((k) => k.includes('['))) return obj;
  const out: Record<string, unknown> = {};
  // No prototype: names like `constructor[0]` or `toString[]` must not find Object's members.
  const pending: Record<string, Array<[number, unknown]>> = Object.create(null);
  for (const [k, v] of Object.entries(obj)) {
    const m = /^([^[\]]+)\[(\d*)\]$/.exec(k);
    if (!m) {
      if (k !== '__proto__') out[k] = v;
      continue;
    }
    const items = (pending[m[1]] ??= []);
    const values = Array.isArray(v) ? v : [v];
    for (const value of values) items.push([m[2] === '' ? Number.MAX_SAFE_INTEGER : Number(m[2]), value]);
  }
  for (const [name, items] of Object.entries(pending)) {
    if (name === '__proto__') continue;
    const own = Object.hasOwn(out, name) ? out[name] : undefined;
    const existing = own === undefined ? [] : Array.isArray(own) ? (own as unknown[]) : [own];
    out[name] = [...existing, ...items.sort((a, b) => a[0] - b[0]).map(([, v]) => v)];
  }
  return out;
}

/**
 * Top-level fields of a parsed body that were sent empty (a blank string, or null): the
 * normalised input drops them like absent ones, which is right for every field but those where
 * "sent empty" means something, i.e. a custom value to clear (docs/decisions.md).
 */
export function blankFields(input: unknown): Set<string> {
  const blank = new Set<string>();
  if (!input || typeof input !== 'object' || Array.isArray(input)) return blank;
  for (const [k, v] of Object.entries(input)) if (v === null || (typeof v === 'string' && v.trim() === '')) blank.add(k);
  return blank;
}

/** Normalises a parsed body or query object; anything else becomes `{}`. */
export function normalizeInput(input: unknown): Record<string, unknown> {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return {};
  return normalizeValue(input, 0, false) as Record<string, unknown>;
}
