import type { Knex } from 'knex';
import { isUtr } from '../http/fields';
import { senderAddress } from '../mail/sender-address';
import { sendDesign } from '../single-sends/rows';
import { joinTemplate, TEMPLATE_HTML } from './template-html';
import { AbPhase } from '../states';
import type { Counter } from '../statistics/counters';

/**
 * Message sources: what a message is made from, and whose it is (docs/decisions.md, "Message
 * sources and statistics"). Two ideas, each declared once here:
 *
 * - An **owner** is the record a message's statistics, tracked links and events belong to, the
 *   one the API names by utr: a single send, or an automation (all its emails together).
 * - A **source** is what one recipient row's message is compiled from: a single send, or one
 *   email of an automation. Each source has one owner.
 *
 * Designs (src/delivery/designs.ts), link registration (src/render/links.ts), the tracking
 * endpoints (src/public/tracking.ts), the statistics (src/statistics) and the events and reports
 * API families ask this module, never the columns themselves. A new kind of source — an A/B
 * variation of a single send — is one more case of the unions below; the compiler then names
 * every function here that must answer for it.
 */

interface OwnerDef {
  /** Its records, each with an `id`, a `utr`, a `deleted_at` and the counters. */
  table: string;
  /** The column that names it on deliveries, events, tracked_links and suppressions. */
  column: string;
  /** The column of each counter on `table`: the spec named the two resources' counters differently. */
  counters: Record<Counter, string>;
  /** Whether it keeps an hourly timeline (`message_stats_hourly` rows of this `owner_type`). */
  timeline: boolean;
  /** Whether the API names it by `utr` (its table then has a `utr` and a `deleted_at`). */
  named: boolean;
}

/** Herald's own counters, named alike on every owner's table (migration 202611250300). */
const HERALD_COUNTERS = {
  deferred: 'deferred',
  dropped: 'dropped',
  bounced_hard: 'bounced_hard',
  bounced_soft: 'bounced_soft',
  unique_clicks: 'unique_clicks',
  total_clicks: 'total_clicks',
  complaints: 'complaints',
} as const;

/** A single send's counters, as the spec names them on its record; an A/B variation's are named alike. */
const SEND_COUNTERS = {
  triggered: 'triggered',
  delivered: 'delivered',
  unique_opens: 'unique_opens',
  opens: 'total_opens',
  bounces: 'bounces',
  unsubscribes: 'unsubscribes',
  ...HERALD_COUNTERS,
} as const;

/**
 * Every kind of owner. The CHECK constraints `tracked_links_one_owner` (exactly one owner column
 * set) and `message_stats_hourly_owner_type_check` list the same columns and kinds;
 * test/api/sources.test.ts fails when a kind is added here without the migration that widens them.
 */
export const OWNERS = {
  single_send: {
    table: 'single_sends',
    column: 'single_send_id',
    counters: SEND_COUNTERS,
    timeline: true,
    named: true,
  },
  automation: {
    table: 'automations',
    column: 'automation_id',
    counters: {
      triggered: 'total_triggered',
      delivered: 'total_delivered',
      unique_opens: 'total_unique_opens',
      opens: 'total_opens',
      bounces: 'total_bounces',
      unsubscribes: 'total_unsubscribe',
      ...HERALD_COUNTERS,
    },
    timeline: true,
    named: true,
  },
  /**
   * One variation of an A/B send (src/ab): the counters of its test-phase messages only, so they
   * are the test's evidence and stand still once the rest of the audience is sent the winner; the
   * send's own counters stay the totals. The tracked links of a design test are its variations'.
   */
  ab_variation: {
    table: 'single_send_variations',
    column: 'ab_variation_id',
    counters: SEND_COUNTERS,
    timeline: false,
    named: false,
  },
} as const satisfies Record<string, OwnerDef>;

export type OwnerKind = keyof typeof OWNERS;
export const OWNER_KINDS = Object.keys(OWNERS) as OwnerKind[];
/** The owners the API names by utr: a single send, an automation. */
export type NamedOwnerKind = { [K in OwnerKind]: (typeof OWNERS)[K]['named'] extends true ? K : never }[OwnerKind];

export interface Owner {
  kind: OwnerKind;
  id: number;
}

/** The owner columns of a row of deliveries, events or tracked_links (one set, the others null). */
export type OwnerColumns = { [K in OwnerKind as (typeof OWNERS)[K]['column']]: number | null };
export const OWNER_COLUMNS = OWNER_KINDS.map((k) => OWNERS[k].column);

/**
 * How an event's ref (MessageRef, src/events/types.ts) names its message's owner. A recipient
 * row of an A/B send also names its variation and its phase (AbPhase: the test group, or the rest
 * sent the winner); absent on every other message.
 */
export interface SourceRef {
  singleSendId: number | null;
  automationId: number | null;
  abVariationId?: number | null;
  abPhase?: number | null;
}

/** The columns of a recipient row (`deliveries`) that an event's ref is made from. */
export type SourceRefColumns = OwnerColumns & { ab_phase: number | null };
/** The same as SQL, for statements that read them (alias `d.`-free: prefix them yourself). */
export const SOURCE_REF_COLUMNS = [...OWNER_COLUMNS, 'ab_phase'];

/** An event's ref, from the columns of the recipient row it is about. */
export function sourceRef(row: SourceRefColumns): SourceRef {
  return { singleSendId: row.single_send_id, automationId: row.automation_id, abVariationId: row.ab_variation_id, abPhase: row.ab_phase };
}

/** The owner columns an event's row is written with. */
export function ownerColumnsOf(ref: SourceRef): OwnerColumns {
  return { single_send_id: ref.singleSendId, automation_id: ref.automationId, ab_variation_id: ref.abVariationId ?? null };
}

/** A message's owner: its single send, else its automation. */
export function ownerOf(ref: SourceRef): Owner | undefined {
  if (ref.singleSendId) return { kind: 'single_send', id: ref.singleSendId };
  if (ref.automationId) return { kind: 'automation', id: ref.automationId };
  return undefined;
}

/**
 * Every owner whose counters a message's events move: its owner (the totals), and, for a message
 * of an A/B test group, its variation — the winner phase's messages move the send's only.
 */
export function counterOwners(ref: SourceRef): Owner[] {
  const owner = ownerOf(ref);
  if (!owner) return [];
  if (ref.abVariationId && ref.abPhase === AbPhase.Test) return [owner, { kind: 'ab_variation', id: ref.abVariationId }];
  return [owner];
}

/** The owner columns of a row that belongs to `owner`. */
export function columnsOf(owner: Owner): OwnerColumns {
  const columns = Object.fromEntries(OWNER_COLUMNS.map((c) => [c, null])) as OwnerColumns;
  (columns as Record<string, number | null>)[OWNERS[owner.kind].column] = owner.id;
  return columns;
}

/**
 * Whether a tracked link (by its owner columns, exactly one set) is one of a message's: its
 * owner's, or — a design test's links — its variation's.
 */
export function ownsLink(ref: SourceRef, link: OwnerColumns): boolean {
  const mine: Owner[] = [];
  const owner = ownerOf(ref);
  if (owner) mine.push(owner);
  if (ref.abVariationId) mine.push({ kind: 'ab_variation', id: ref.abVariationId });
  const theirs = OWNER_KINDS.filter((k) => (link as Record<string, number | null>)[OWNERS[k].column] !== null);
  return theirs.length === 1 && mine.some((o) => o.kind === theirs[0] && (link as Record<string, number | null>)[OWNERS[o.kind].column] === o.id);
}

/**
 * The account's owner record of this kind with this utr (any case; a utr of another shape names
 * nothing): its id and utr as stored. Soft-deleted records only when asked for (their events stay;
 * their statistics leave the API with them).
 */
export async function findOwner(
  db: Knex,
  userId: number,
  kind: NamedOwnerKind,
  utr: string,
  opts: { deleted?: boolean } = {},
): Promise<{ id: number; utr: string } | undefined> {
  if (!isUtr(utr)) return undefined;
  const q = db(OWNERS[kind].table).where({ user_id: userId, utr: utr.toLowerCase() }).first('id', 'utr');
  if (!opts.deleted) q.whereNull('deleted_at');
  return (await q) as { id: number; utr: string } | undefined;
}

/** The owners the API names by utr, in OWNERS' order. */
const NAMED_OWNERS = OWNER_KINDS.filter((k): k is NamedOwnerKind => OWNERS[k].named);

/**
 * The utr of each owner the API names, as the API shows it beside a row that carries owner
 * columns (an event, a suppression): `name` is the field (`single_send_utr`, `automation_utr`),
 * `sql` the value once `utrJoins` joined its table (null when the row has no such owner).
 */
export const UTR_FIELDS = NAMED_OWNERS.map((kind) => ({ name: `${kind}_utr`, sql: `utr_${kind}.utr` }));

/** UTR_FIELDS as select columns (`… as single_send_utr`), for knex or SQL. */
export const UTR_COLUMNS = UTR_FIELDS.map((f) => `${f.sql} as ${f.name}`);

/**
 * The LEFT JOINs that UTR_FIELDS read, for rows of alias `alias`: each owner table filtered by
 * `account`, an SQL expression (`e.user_id`, a named binding) or the account's id. Given as a
 * value, Citus routes the query to one node: an outer join does not pass a column's value on.
 * Soft-deleted owners keep their utr (their events and suppressions stay).
 */
export function utrJoins(alias: string, account: string | number): string {
  if (typeof account === 'number' && !Number.isSafeInteger(account)) throw new Error(`utrJoins: bad account ${account}`);
  return NAMED_OWNERS.map((kind) => {
    const t = `utr_${kind}`;
    return `LEFT JOIN ${OWNERS[kind].table} ${t} ON ${t}.user_id = ${account} AND ${t}.id = ${alias}.${OWNERS[kind].column}`;
  }).join('\n');
}

/**
 * Variation indexes already read, per database (keyed by the pool's configuration, which its
 * transactions share): a variation's index never changes (an update replaces variations under new ids).
 */
const knownIndexes = new WeakMap<object, Map<number, number>>();
const KNOWN_INDEXES_MAX = 10_000;

/**
 * The index (0 for A … 5 for F) of each A/B variation named, by id: what a variation's events
 * carry as `data.variation`. Read once per variation and process (an indexed read per account of
 * a batch naming variations not seen yet): every batch of an A/B send's outcomes names them.
 */
export async function variationIndexes(db: Knex, refs: Array<{ userId: number; variationId: number }>): Promise<Map<number, number>> {
  const pool = db.client.config as object;
  let known = knownIndexes.get(pool);
  if (!known) knownIndexes.set(pool, (known = new Map()));
  const out = new Map<number, number>();
  const byAccount = new Map<number, Set<number>>();
  for (const r of refs) {
    const idx = known.get(r.variationId);
    if (idx !== undefined) out.set(r.variationId, idx);
    else byAccount.set(r.userId, (byAccount.get(r.userId) ?? new Set()).add(r.variationId));
  }
  for (const [userId, ids] of byAccount) {
    const rows = (await db('single_send_variations').where('user_id', userId).whereIn('id', [...ids]).select('id', 'idx')) as Array<{ id: number; idx: number }>;
    if (known.size + rows.length > KNOWN_INDEXES_MAX) known.clear();
    for (const r of rows) {
      out.set(r.id, r.idx);
      known.set(r.id, r.idx);
    }
  }
  return out;
}

/** The condition "this owner's events" on the `events` table (alias `alias`). */
export function eventsOf(owner: Owner, alias = 'e'): Record<string, number> {
  return { [`${alias}.${OWNERS[owner.kind].column}`]: owner.id };
}

// ---------------------------------------------------------------------------------------------
// Sources: what a recipient row's message is compiled from.

export type MessageSource =
  | { kind: 'single_send'; singleSendId: number }
  | { kind: 'automation_email'; automationId: number; scheduleId: number }
  /** One variation of an A/B send: the send with the variation's subject, design or sender over it. */
  | { kind: 'ab_variation'; singleSendId: number; variationId: number };

/** The columns of a recipient row (`deliveries`) that name its source. */
export type SourceColumns = OwnerColumns & { automation_schedule_id: number | null };

export function sourceOfRow(row: SourceColumns): MessageSource | undefined {
  if (row.single_send_id && row.ab_variation_id) return { kind: 'ab_variation', singleSendId: row.single_send_id, variationId: row.ab_variation_id };
  if (row.single_send_id) return { kind: 'single_send', singleSendId: row.single_send_id };
  if (row.automation_id && row.automation_schedule_id) {
    return { kind: 'automation_email', automationId: row.automation_id, scheduleId: row.automation_schedule_id };
  }
  return undefined;
}

/** A source's identity, for caches of what is made once per source (a compiled design). */
export function sourceKey(source: MessageSource): string {
  switch (source.kind) {
    case 'single_send':
      return `s:${source.singleSendId}`;
    case 'automation_email':
      return `a:${source.scheduleId}`;
    case 'ab_variation':
      return `v:${source.variationId}`;
  }
}

/** The owner a source's messages count for: a single send's (a variation's, its send's), an automation email's automation. */
export function ownerOfSource(source: MessageSource): Owner {
  switch (source.kind) {
    case 'single_send':
    case 'ab_variation':
      return { kind: 'single_send', id: source.singleSendId };
    case 'automation_email':
      return { kind: 'automation', id: source.automationId };
  }
}

/**
 * What a design is compiled from (src/render/render.ts `compileDesign` adds what is the same for
 * every source), whatever its source: the HTML that is sent (the source's own, else its
 * template's), the sender, `((sender_address))`.
 */
export interface DesignParts {
  subject: string;
  preheader: string;
  html: string;
  fromName: string;
  fromEmail: string;
  replyTo: string;
  senderAddress: string;
  userId: number;
  /** Whose tracked links the design's links are. */
  owner: Owner;
}

/** A single send: everything about its sender was copied onto the send when it was saved. */
async function singleSendParts(db: Knex, userId: number, id: number): Promise<DesignParts | undefined> {
  const s = await sendDesign(db, userId, id);
  // A template_id that names no design (left-joined: templates or the account's designs).
  if (!s || (s.template_html ?? s.html_code) === null) return undefined;
  return {
    userId: s.user_id,
    owner: { kind: 'single_send', id },
    subject: s.subject,
    preheader: s.preheader,
    html: s.template_html ?? s.html_code,
    fromName: s.sender_name ?? '',
    fromEmail: s.from_sender,
    replyTo: s.reply_to,
    senderAddress: s.sender_address ?? '',
  };
}

/** An automation email: its own subject and design, its sender as it is now (no preheader). */
async function automationEmailParts(db: Knex, userId: number, source: { automationId: number; scheduleId: number }): Promise<DesignParts | undefined> {
  const s = await joinTemplate(db('automation_schedules as s'), 's')
    .join('senders as snd', (j) => j.on('snd.id', 's.sender_id').andOn('snd.user_id', 's.user_id'))
    .where({ 's.id': source.scheduleId, 's.user_id': userId, 'snd.user_id': userId })
    .first('s.user_id', 's.subject', 's.template_html', db.raw(TEMPLATE_HTML), 'snd.from_name', 'snd.from_email', 'snd.reply_to_email',
      'snd.company_address', 'snd.company_address2', 'snd.zip_code', 'snd.country_id', 'snd.state_id', 'snd.city_id');
  if (!s || (s.template_html ?? s.html_code) === null) return undefined;
  return {
    userId: s.user_id,
    owner: { kind: 'automation', id: source.automationId },
    subject: s.subject,
    preheader: '',
    html: s.template_html ?? s.html_code,
    fromName: s.from_name,
    fromEmail: s.from_email,
    replyTo: s.reply_to_email,
    senderAddress: await senderAddress(db, s),
  };
}

/**
 * An A/B variation: its send's parts with what the variation replaces over them — its subject,
 * its design (whose links are then the variation's own, to be told apart in the report), or its
 * sender (copied onto the variation when it was saved, as a send's is). Index 0 (A) replaces
 * nothing: it is the send.
 */
async function variationParts(db: Knex, userId: number, source: { singleSendId: number; variationId: number }): Promise<DesignParts | undefined> {
  const send = await singleSendParts(db, userId, source.singleSendId);
  const v = await joinTemplate(db('single_send_variations as v'), 'v')
    .join('ab_tests as t', (j) => j.on('t.single_send_id', 'v.single_send_id').andOn('t.user_id', 'v.user_id'))
    .where({ 'v.id': source.variationId, 'v.single_send_id': source.singleSendId, 'v.user_id': userId, 't.user_id': userId })
    .first('t.type', 'v.subject', 'v.template_html', 'v.template_id', db.raw(TEMPLATE_HTML), 'v.from_sender', 'v.reply_to', 'v.sender_name', 'v.sender_address');
  if (!send || !v) return undefined;
  switch (v.type as 'subject' | 'design' | 'sender') {
    case 'subject':
      return { ...send, subject: v.subject ?? send.subject };
    case 'design':
      return {
        ...send,
        owner: { kind: 'ab_variation', id: source.variationId },
        html: v.template_id === null ? send.html : (v.template_html ?? v.html_code),
      };
    case 'sender':
      return v.from_sender === null
        ? send
        : { ...send, fromEmail: v.from_sender, replyTo: v.reply_to, fromName: v.sender_name ?? '', senderAddress: v.sender_address ?? '' };
  }
}

/** The parts of account `userId`'s source (every table named with the account: one node's read on Citus). */
export async function designParts(db: Knex, userId: number, source: MessageSource): Promise<DesignParts | undefined> {
  switch (source.kind) {
    case 'single_send':
      return singleSendParts(db, userId, source.singleSendId);
    case 'automation_email':
      return automationEmailParts(db, userId, source);
    case 'ab_variation':
      return variationParts(db, userId, source);
  }
}
