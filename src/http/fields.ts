import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';

/**
 * Builders for form-field schemas. Form values arrive as strings (multipart, urlencoded)
 * or typed (JSON); these accept both and produce the typed value. Empty strings never reach
 * them: form.ts turns them into "absent", as Laravel's ConvertEmptyStringsToNull does.
 */

export const MAX_INT = 2_147_483_647;

/** Local part: RFC 5322 atext with single dots; domain: letters (IDN ok), digits, hyphens. */
export const EMAIL_PATTERN =
  /^(?=.{3,254}$)(?=[^@]{1,64}@)[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+[\p{L}]{2,63}$/u;

export function isEmail(value: string): boolean {
  return EMAIL_PATTERN.test(value);
}

/** A form value written as a whole number (`7`, `007`, `+7`, `-7`, or a JSON number) as a number; other values as they are. */
export const toNumber = (v: unknown): unknown => {
  if (typeof v === 'string' && /^[+-]?\d+$/.test(v.trim())) return Number(v.trim());
  return v;
};

/** A required string, at most `max` characters. */
export const text = (max = 255, min?: number) => {
  let s = z.string().max(max);
  // Only a string is measured: an array (`q=a&q=b`) is "must be a string", not also "at least N items".
  // (zod runs a check with `when` only when it says so; the option is missing from min's declared type.)
  if (min !== undefined) s = s.min(min, { when: (payload: { value: unknown }) => typeof payload.value === 'string' } as Parameters<typeof s.min>[1]);
  return s;
};

/** An optional string (absent → undefined). */
export const optionalText = (max = 255) => z.string().max(max).optional();

/** A long design field (HTML, editor JSON): kept verbatim, up to the route's body limit. */
export const longText = () => z.string().optional();

export const email = () => z.string().max(254).pipe(z.email({ pattern: EMAIL_PATTERN }));
export const optionalEmail = () => email().optional();

/** A whole number in the PostgreSQL `integer` range (form strings accepted). */
export const integer = (min = 0, max = MAX_INT) =>
  z.preprocess(
    toNumber,
    z
      .number({
        error: (iss) =>
          iss.code === 'invalid_type' && iss.input !== undefined ? 'The :attribute must be an integer.' : undefined,
      })
      .int()
      .min(min)
      .max(max),
  );

/** A number written as a decimal (`0.95`, `1`, `.5`, or a JSON number) in [min, max] (form strings accepted). */
export const decimal = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^[+-]?(\d+\.?\d*|\.\d+)$/.test(v.trim()) ? Number(v.trim()) : v),
    z
      .number({
        error: (iss) => (iss.code === 'invalid_type' && iss.input !== undefined ? 'The :attribute must be a number.' : undefined),
      })
      .min(min)
      .max(max),
  );

/** A record id: a positive 32-bit integer. */
export const id = () => integer(1);

/** Flags are sent as 0 or 1 (true/false accepted from JSON). */
export const flag = () =>
  z.preprocess((v) => {
    if (v === true || v === 'true') return 1;
    if (v === false || v === 'false') return 0;
    return toNumber(v);
  }, z.literal([0, 1]));

/** An array field (`strIds[0]`, `strIds[]`, repeated keys, JSON arrays): at least one item. */
export const list = <T extends z.ZodType>(item: T, max = 100_000) =>
  z.preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(item).min(1).max(max));

export const optionalList = <T extends z.ZodType>(item: T, max = 100_000) =>
  z.preprocess((v) => (v === undefined || Array.isArray(v) ? v : [v]), z.array(item).max(max).optional());

/**
 * Comma-separated addresses (`a@x.com, b@y.org`). Returns the distinct addresses in the
 * order given (case-insensitively distinct), or a VAL message naming the first bad one.
 */
export const emailList = (max = 10_000) =>
  z
    .string()
    .transform((v, ctx) => {
      const seen = new Set<string>();
      const out: string[] = [];
      for (const raw of v.split(/[,;\s]+/)) {
        const addr = raw.trim();
        if (!addr) continue;
        if (!isEmail(addr)) {
          ctx.addIssue({
            code: 'custom',
            message: `The :attribute must be a valid email address (${JSON.stringify(addr.slice(0, 100))} is not).`,
          });
          return z.NEVER;
        }
        const key = addr.toLowerCase();
        if (!seen.has(key)) {
          seen.add(key);
          out.push(addr);
        }
      }
      if (out.length === 0) {
        ctx.addIssue({ code: 'custom', message: 'The :attribute field is required.' });
        return z.NEVER;
      }
      if (out.length > max) {
        ctx.addIssue({ code: 'custom', message: `The :attribute must not have more than ${max} addresses.` });
        return z.NEVER;
      }
      return out;
    });

/** An uploaded file (multer's record) with one of these extensions. */
export const uploadedFile = (extensions: string[]) =>
  z
    .custom<Express.Multer.File>((v) => typeof v === 'object' && v !== null && 'path' in v && 'originalname' in v, {
      message: 'The :attribute field is required.',
    })
    .refine((f) => extensions.some((ext) => f.originalname.toLowerCase().endsWith(`.${ext}`)), {
      message: `The :attribute must be a file of type: ${extensions.join(', ')}.`,
    });

/**
 * Public identifiers of single sends, automations and their emails: UUIDs (a utr of any other shape
 * names nothing). Any version is accepted: utrs made before UUIDv7 (version 4) stay valid.
 */
const UTR_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUtr(value: string): boolean {
  return UTR_PATTERN.test(value);
}

/**
 * A new utr: a UUIDv7 (RFC 9562), whose first 48 bits are the time in milliseconds, so the unique
 * index on `utr` takes each insert at its right edge instead of on a random page
 * (docs/decisions.md, "Message sources and statistics"). The `uuid` package keeps utrs made in one
 * process in order within a millisecond too.
 */
export function newUtr(): string {
  return uuidv7();
}
