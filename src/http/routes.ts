import fs from 'node:fs';
import path from 'node:path';
import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import multer from 'multer';
import { z } from 'zod';
import type { Ctx, Deps } from '../context';
import { requireKeys } from './auth';
import { keyPairLimit } from './rate-limit';
import { ok, type Envelope } from './envelope';
import { invalid, methodNotAllowed, routeNotFound, tooLarge, type NotFound } from './errors';
import { normalizeInput } from './form';
import { readPaging, type Paging } from './pagination';
import { validate, type MessageOptions } from './validate';
import { isUtr, MAX_INT, toNumber } from './fields';
import { can, refusedMessage, type Permission } from '../team/permissions';
import { recordAudit, type AuditEntry } from '../audit/record';
import { forbidden } from './errors';

/**
 * The route table. Each resource family declares its operations once (path, input schemas,
 * failure codes, handler); this file turns them into express routes with auth, body parsing,
 * validation and the envelope, and openapi.ts turns the same table into the API document.
 */

export type Method = 'get' | 'post' | 'delete';
export type FailureCode = 'AUTH' | 'VAL' | 'NF1' | 'NF2' | 'REFUSED' | 'TOO_LARGE';

export interface IdParam {
  /** Query-string name, e.g. `contact_type_id`; a body field of that name is accepted too. */
  name: string;
  notFound: NotFound;
  /** Missing id answers VAL (`The <name> field is required.`) instead of not found. */
  requiredMessage?: boolean;
  /** `utr` ids are strings; `bigint` a positive integer of a bigserial (events); everything else a positive 32-bit integer. */
  kind?: 'int' | 'bigint' | 'utr';
}

export interface FileParam {
  field: string;
  maxBytes: (deps: Deps) => number;
}

export interface RouteInput<B, Q> {
  ctx: Ctx;
  /** The record id from `def.id` (a number, or a string for utr ids). */
  id: number;
  utr: string;
  body: B;
  query: Q;
  paging?: Paging;
  file?: Express.Multer.File;
  deps: Deps;
  req: Request;
  res: Response;
  /**
   * Writes this route's audit entry now, for a handler that streams its answer: it calls this
   * once its checks passed and before the first byte, so the entry is on record before the client
   * has the whole answer (runRoute does not write it a second time). Other handlers never call it.
   */
  auditNow(): Promise<void>;
}

export interface RouteDef<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> {
  method: Method;
  /** Spec rule 9: operations whose method the spec states two ways accept both. */
  alsoMethods?: Method[];
  path: string;
  tag: string;
  summary: string;
  description?: string;
  id?: IdParam;
  query?: Q;
  body?: B;
  /** Laravel display names and whole-message overrides for this route's fields. */
  messages?: MessageOptions;
  file?: FileParam;
  /** Routes that carry designs (HTML/JSON) get the larger body limit. */
  bodyLimit?: 'default' | 'design';
  /** Lists accept `?page=&per_page=`. */
  list?: boolean;
  /** Schema of `message` on success (documentation and contract tests). */
  response: z.ZodType;
  /** Spec rule 3: the confirmation is in `errors`. */
  inErrors?: boolean;
  failures: FailureCode[];
  /**
   * The one permission this route needs (src/team/permissions.ts). The API's keys act as the
   * owner, who has every permission; a dashboard user's role is checked before validation (403
   * naming the permission, nothing changed).
   */
  permission: Permission;
  /**
   * A route that changes something writes one audit entry once it succeeded: `action` is its fixed
   * name, `entry` what it changed (object and summary, from the validated input and the answer).
   */
  audit?: RouteAudit<z.output<B>, z.output<Q>>;
  handle(input: RouteInput<z.output<B>, z.output<Q>>): Promise<Envelope> | Envelope;
}

export interface RouteAudit<B = unknown, Q = unknown> {
  action: string;
  entry?: (input: RouteInput<B, Q>, envelope: Envelope) => Omit<AuditEntry, 'action'> | undefined;
}

/** Declares a route with its handler typed by its schemas. */
export function route<B extends z.ZodType = z.ZodObject<{}>, Q extends z.ZodType = z.ZodObject<{}>>(
  def: RouteDef<B, Q>,
): RouteDef {
  return def as unknown as RouteDef;
}

function readId(def: IdParam, query: Record<string, unknown>, body: Record<string, unknown>): number | string {
  const raw = query[def.name] ?? body[def.name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined) {
    if (def.requiredMessage) throw invalid({ [def.name]: [`The ${def.name.replace(/_/g, ' ')} field is required.`] });
    throw def.notFound();
  }
  // Nested form values (`id[0][x]=…`) are objects: they cannot name a record (and String()
  // of an object with its own `toString` field would throw).
  if (typeof value !== 'string' && typeof value !== 'number') throw def.notFound();
  const text = String(value);
  if (def.kind === 'utr') {
    if (!isUtr(text)) throw def.notFound();
    return text;
  }
  // Written as body ids are (see toNumber: `007` is 7); anything that is not a positive
  // 32-bit integer (or, for a bigserial, a safe one) cannot be a record of ours.
  const n = toNumber(text);
  const max = def.kind === 'bigint' ? Number.MAX_SAFE_INTEGER : MAX_INT;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max) throw def.notFound();
  return n;
}

function contentLengthGuard(limit: number): RequestHandler {
  return (req, _res, next) => {
    const length = Number(req.get('content-length') ?? 0);
    if (length > limit) {
      next(tooLarge(`The request body must not be greater than ${Math.floor(limit / 1024)} kilobytes.`));
      return;
    }
    next();
  };
}

function bodyParsers(def: RouteDef, deps: Deps): RequestHandler[] {
  const limit = def.bodyLimit === 'design' ? deps.config.designBodyLimitBytes : deps.config.bodyLimitBytes;
  const uploadDir = path.join(deps.config.dataDir, 'uploads');
  const upload = multer({
    storage: def.file
      ? multer.diskStorage({
          destination: (_req, _file, cb) => {
            fs.mkdir(uploadDir, { recursive: true }, (err) => cb(err, uploadDir));
          },
        })
      : multer.memoryStorage(),
    limits: {
      fieldSize: limit,
      fields: 100_000,
      fileSize: def.file ? def.file.maxBytes(deps) : 0,
      // No file limit on other routes: upload.none() then names the offending field.
      files: def.file ? 1 : undefined,
      parts: 100_010,
    },
  });
  const multipart = def.file ? upload.single(def.file.field) : upload.none();
  return [
    def.file ? contentLengthGuard(def.file.maxBytes(deps) + limit) : contentLengthGuard(limit),
    express.json({ limit, strict: false, type: ['application/json', 'application/*+json'] }),
    express.urlencoded({ extended: true, limit, parameterLimit: 100_000 }),
    multipart,
  ];
}

/** What a route is called with, before validation: the query and body as parsed, the upload. */
export interface RawInput {
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  file?: Express.Multer.File;
}

/**
 * One route's validation and handler on raw input, for the API (below) and for the dashboard's
 * forms (src/dashboard/form-kit.tsx), so one validation guards both callers.
 */
export async function runRoute(def: RouteDef, raw: RawInput, env: { ctx: Ctx; deps: Deps; req: Request; res: Response }): Promise<Envelope> {
  const query = normalizeInput(raw.query);
  const body = normalizeInput(raw.body);
  // The upload joins the form fields, so one validation reports a missing file and a
  // missing field together.
  if (def.file && raw.file) body[def.file.field] = raw.file;
  const actor = env.ctx.actor;
  if (actor && !can(actor.role, def.permission)) throw forbidden(refusedMessage(def.permission));
  let id: number | string = 0;
  if (def.id) id = readId(def.id, query, body);
  let audited = false;
  const audit = async (envelope: Envelope): Promise<void> => {
    if (audited || !def.audit || !actor) return;
    audited = true;
    const entry = def.audit.entry?.(input, envelope) ?? {};
    await recordAudit(env.ctx.db, env.ctx.userId, actor, { action: def.audit.action, ...entry });
  };
  const input: RouteInput<unknown, unknown> = {
    ctx: env.ctx,
    id: typeof id === 'number' ? id : 0,
    utr: typeof id === 'string' ? id : '',
    body: def.body ? validate(def.body, body, def.messages) : body,
    query: def.query ? validate(def.query, query, def.messages) : query,
    paging: def.list ? readPaging(query) : undefined,
    file: raw.file,
    deps: env.deps,
    req: env.req,
    res: env.res,
    auditNow: () => audit(ok(null)),
  };
  const envelope = await def.handle(input);
  await audit(envelope);
  return envelope;
}

function handler(def: RouteDef, deps: Deps): RequestHandler {
  return async (req: Request, res: Response) => {
    const envelope = await runRoute(def, { query: req.query as Record<string, unknown>, body: req.body as Record<string, unknown>, file: req.file }, { ctx: req.ctx as Ctx, deps, req, res });
    if (!res.headersSent) res.status(200).json(envelope);
  };
}

/** Uploaded temp files never outlive the request, whatever the handler did with them. */
function cleanupUpload(req: Request, res: Response, next: NextFunction): void {
  res.on('close', () => {
    if (req.file?.path) fs.rm(req.file.path, { force: true }, () => undefined);
  });
  next();
}

/**
 * The key a request path is looked up by: express matches routes case-insensitively and with
 * or without one trailing slash, and so does this.
 */
function routeKey(path: string): string {
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).toLowerCase();
}

/**
 * Mounts every route. Every API path is a fixed string, so one Map lookup finds the router of
 * a path instead of express trying the ≈80 routes in order; the rest (auth, body parsing,
 * validation, the envelope) is each route's own chain, as before.
 */
export function mountRoutes(app: Express, defs: RouteDef[], deps: Deps): void {
  const auth = requireKeys(deps.db, keyPairLimit(deps.config.rateLimitPerMinute), deps.keys);
  const paths = new Map<string, { router: express.Router; methods: Set<string> }>();
  for (const def of defs) {
    const key = routeKey(def.path);
    let path = paths.get(key);
    if (!path) paths.set(key, (path = { router: express.Router(), methods: new Set() }));
    for (const method of [def.method, ...(def.alsoMethods ?? [])]) {
      const uploads: RequestHandler[] = def.file ? [cleanupUpload] : [];
      path.router[method](def.path, auth, ...uploads, ...bodyParsers(def, deps), handler(def, deps));
      path.methods.add(method.toUpperCase());
      if (method === 'get') path.methods.add('HEAD');
    }
  }
  // Other methods go on to the fallbacks (a router would answer OPTIONS by itself).
  app.use((req: Request, res: Response, next: NextFunction) => {
    const path = paths.get(routeKey(req.path));
    if (path?.methods.has(req.method)) path.router(req, res, next);
    else next();
  });
}

/**
 * The last handlers: a known path with another method answers 405 with `Allow`, anything
 * else 404 `Route not found`.
 */
export function mountFallbacks(app: Express, defs: RouteDef[]): void {
  const allowed = new Map<string, Set<string>>();
  for (const def of defs) {
    const set = allowed.get(def.path) ?? new Set<string>();
    for (const method of [def.method, ...(def.alsoMethods ?? [])]) {
      set.add(method.toUpperCase());
      if (method === 'get') set.add('HEAD');
    }
    allowed.set(def.path, set);
  }
  app.use((req: Request, _res: Response, next: NextFunction) => {
    const methods = allowed.get(req.path.replace(/\/+$/, '') || '/');
    next(methods ? methodNotAllowed([...methods]) : routeNotFound());
  });
}
