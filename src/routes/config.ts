import fs from 'node:fs';
import { z } from 'zod';
import { STREAMS, type RouteConfig, type Stream } from './types';

/**
 * The routes document (SMTP_ROUTES, or the file SMTP_ROUTES_FILE names): a JSON array of routes in
 * snake_case, checked once at start. Every problem is reported, one line each, naming the route
 * (by name, or by position when the name itself is wrong) and the field — never the url or
 * anything else of the document's values: the url holds the relay's password.
 *
 *   [{ "name": "ses", "url": "smtp://user:pass@email-smtp.eu-west-1.amazonaws.com:587",
 *      "weight": 2, "max_per_second": 14, "max_per_day": 50000, "streams": ["marketing"],
 *      "warmup": { "start": "2026-12-01", "schedule": "standard" } },
 *    { "name": "own", "url": "smtp://relay.internal:25", "streams": ["marketing", "system"] }]
 */

/** A route as the document gives it: pool_size defaults to SMTP_POOL_SIZE, which src/config.ts fills in. */
export type RouteDraft = Omit<RouteConfig, 'poolSize'> & { poolSize?: number };

export type RoutesParse = { routes: RouteDraft[]; problems?: undefined } | { routes?: undefined; problems: string[] };

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const POSITIVE_INT = 'must be a positive integer';

const positiveInt = z.number({ message: POSITIVE_INT }).int({ message: POSITIVE_INT }).positive({ message: POSITIVE_INT }).max(Number.MAX_SAFE_INTEGER, { message: POSITIVE_INT });

const routeSchema = z.strictObject({
  name: z.string({ message: 'must be a string' }).regex(NAME, { message: 'must be 1 to 64 letters, digits, _ . or -' }),
  url: z.string({ message: 'must be a string' }).superRefine((v, ctx) => {
    const problem = smtpUrlProblem(v);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }),
  weight: z
    .number({ message: 'must be a number greater than 0' })
    .gt(0, { message: 'must be a number greater than 0' })
    .max(1_000_000, { message: 'must be at most 1000000' })
    .default(1),
  max_per_second: positiveInt.optional(),
  max_per_hour: positiveInt.optional(),
  max_per_day: positiveInt.optional(),
  pool_size: z
    .number({ message: 'must be a whole number between 1 and 100' })
    .int({ message: 'must be a whole number between 1 and 100' })
    .min(1, { message: 'must be a whole number between 1 and 100' })
    .max(100, { message: 'must be a whole number between 1 and 100' })
    .optional(),
  streams: z
    .array(z.enum(STREAMS as [Stream, ...Stream[]], { message: 'must be "marketing" or "system"' }), { message: 'must be an array of "marketing" and/or "system"' })
    .min(1, { message: 'must name at least one stream: "marketing" and/or "system"' })
    .optional(),
  warmup: z
    .strictObject(
      {
        start: z.string({ message: 'must be a date, YYYY-MM-DD' }).refine(isDate, { message: 'must be a date, YYYY-MM-DD' }),
        schedule: z.union([z.literal('standard'), z.array(positiveInt).min(1, { message: 'must list at least one day' })], {
          message: 'must be "standard" or a non-empty array of positive integers (the hourly cap of each day)',
        }),
      },
      { message: 'must be an object: { "start": "YYYY-MM-DD", "schedule": "standard" | [hourly caps by day] }' },
    )
    .optional(),
});

/** Why `v` is not a usable smtp: or smtps: URL, without repeating any of it. */
function smtpUrlProblem(v: string): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(v.trim())?.[1].toLowerCase();
  if (scheme !== 'smtp' && scheme !== 'smtps') return 'must be a URL starting with smtp:// or smtps://';
  let parsed: URL;
  try {
    parsed = new URL(v.trim());
  } catch {
    return 'is not a valid URL (a port from 0 to 65535; percent-encode any @ : / ? # % in the user name or password)';
  }
  if (!parsed.hostname) return 'has no host';
  try {
    decodeURIComponent(parsed.username);
    decodeURIComponent(parsed.password);
  } catch {
    return 'has a % in the user name or password that does not start a percent-encoded character (write % as %25)';
  }
  return undefined;
}

function isDate(v: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(v)) return false;
  const d = new Date(`${v}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v;
}

/** 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, … 21st. */
function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
  return `${n}${suffix}`;
}

/** A field path as the document spells it: warmup.schedule[2]. */
function fieldPath(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');
}

/**
 * Parses and checks a routes document. Problems read `route "ses" (2nd): max_per_hour: must be a
 * positive integer`; the caller puts the setting's name in front.
 */
export function parseRoutesDocument(text: string): RoutesParse {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    // JSON.parse's message quotes the text around the mistake: only its position is repeated.
    const at = /position (\d+)/.exec(String((err as Error).message))?.[1];
    return { problems: [`is not valid JSON${at ? ` (at character ${at})` : ''}`] };
  }
  if (!Array.isArray(doc)) return { problems: ['must be a JSON array of routes'] };
  if (doc.length === 0) return { problems: ['must list at least one route (leave it unset to use SMTP_URL, or the outbox without it)'] };

  const problems: string[] = [];
  const routes: RouteDraft[] = [];
  const seen = new Map<string, number>();
  doc.forEach((item: unknown, i) => {
    const position = ordinal(i + 1);
    const rawName = (item as { name?: unknown } | null)?.name;
    const named = typeof rawName === 'string' && NAME.test(rawName);
    const label = named ? `route "${rawName}" (${position})` : `the ${position} route`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      problems.push(`${label}: must be an object with a name and a url`);
      return;
    }
    const parsed = routeSchema.safeParse(item);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const field = fieldPath(issue.path);
        if (issue.code === 'unrecognized_keys') {
          const where = field ? `${field}: ` : '';
          for (const key of issue.keys) problems.push(`${label}: ${where}unknown field ${JSON.stringify(key.slice(0, 64))}`);
        } else {
          problems.push(`${label}: ${field || 'route'}: ${issue.message}`);
        }
      }
      return;
    }
    const r = parsed.data;
    const key = r.name.toLowerCase();
    const earlier = seen.get(key);
    if (earlier !== undefined) {
      problems.push(`${label}: name: the ${ordinal(earlier + 1)} route has the same name (names are compared without case)`);
      return;
    }
    seen.set(key, i);
    routes.push({
      name: r.name,
      url: r.url.trim(),
      weight: r.weight,
      ...(r.max_per_second !== undefined && { maxPerSecond: r.max_per_second }),
      ...(r.max_per_hour !== undefined && { maxPerHour: r.max_per_hour }),
      ...(r.max_per_day !== undefined && { maxPerDay: r.max_per_day }),
      ...(r.pool_size !== undefined && { poolSize: r.pool_size }),
      streams: r.streams ? STREAMS.filter((s) => r.streams!.includes(s)) : [...STREAMS],
      ...(r.warmup && { warmup: { start: r.warmup.start, schedule: r.warmup.schedule } }),
    });
  });
  if (problems.length) return { problems };

  // Campaign mail and Herald's own mail (verification, notifications, opt-in confirmations) both need somewhere to go.
  for (const stream of STREAMS) {
    if (!routes.some((r) => r.streams.includes(stream))) {
      problems.push(`no route carries the "${stream}" stream: add "${stream}" to the streams of at least one route`);
    }
  }
  return problems.length ? { problems } : { routes };
}

/** SMTP_ROUTES_FILE: the document read from a file (problems name the file's problem, never its contents). */
export function readRoutesFile(file: string): RoutesParse {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return { problems: ['cannot read that file'] };
  }
  return parseRoutesDocument(text);
}

interface RouteSettings {
  smtpUrl?: string;
  smtpRoutes?: RouteDraft[];
  smtpRoutesFile?: RouteDraft[];
  smtpPoolSize: number;
}

/**
 * config.routes: the routes document when there is one, else SMTP_URL as one route `default`
 * (weight 1, no quotas, both streams), else none (mail goes to the outbox). A warning when SMTP_URL
 * is set beside a document: it is ignored, which is allowed so a deployment can add routes first
 * and remove SMTP_URL later.
 */
export function resolveRoutes(s: RouteSettings): { routes: RouteConfig[]; warnings: string[] } {
  const document = s.smtpRoutes ?? s.smtpRoutesFile;
  if (document) {
    const source = s.smtpRoutes ? 'SMTP_ROUTES' : 'SMTP_ROUTES_FILE';
    return {
      routes: document.map((r) => ({ ...r, poolSize: r.poolSize ?? s.smtpPoolSize })),
      warnings: s.smtpUrl ? [`SMTP_URL is ignored: ${source} lists the delivery routes`] : [],
    };
  }
  if (s.smtpUrl) return { routes: [{ name: 'default', url: s.smtpUrl, weight: 1, poolSize: s.smtpPoolSize, streams: [...STREAMS] }], warnings: [] };
  return { routes: [], warnings: [] };
}
