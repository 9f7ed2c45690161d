import type { Express, Response } from 'express';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Deps } from '../context';
import { secret } from '../db/secrets';
import { lockRowsForHits, rowsByStoredTokens } from '../deliveries/rows';
import { recordMessageEvents } from '../events/record';
import type { MessageEvent } from '../events/types';
import type { Logger } from '../logger';
import { OWNER_COLUMNS, ownsLink, SOURCE_REF_COLUMNS, sourceRef, type OwnerColumns, type SourceRefColumns } from '../sources';
import { lookupToken, readClickToken, type ClickRef, type RecipientRef } from '../recipient-token';
import { pageErrors, sendRecipientMessage } from '../dashboard/recipient';

/**
 * Open pixel and click redirects: the two public endpoints that every recipient's mail client
 * (and every link scanner) hits. Each hit is one event (`opened`; `clicked`, plus an `opened`
 * when a person clicks a message that had none — images are often blocked). Hits are recorded
 * in group transactions: while one is committing, the next hits queue and go into the following
 * one, so a burst costs a few commits instead of one per hit, and each answer still waits for
 * its event to be committed (nothing is acknowledged and then lost).
 */

/** The smallest transparent GIF (43 bytes). */
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * User-Agents of link scanners and prefetchers (mail security gateways, chat link previews,
 * crawlers). A click from one is flagged `suspected_bot` whatever its timing.
 */
const SCANNER_AGENT =
  /\b(bot|crawler|spider|slurp|barracuda|mimecast|proofpoint|urldefense|forcepoint|messagelabs|symantec|trend ?micro|sophos|fireeye|ironport|ironscales|zscaler|checkpoint|bitdefender|urlscan|safelinks|linkpreview|facebookexternalhit|slackbot|skypeuripreview|whatsapp)\b/i;

export function isScannerAgent(userAgent: string | undefined): boolean {
  return userAgent !== undefined && SCANNER_AGENT.test(userAgent);
}

interface TrackedLink {
  id: number;
  userId: number;
  url: string;
  /** The URL as a Location header carries it (ASCII: punycode host, percent-encoded path). */
  location: string;
  /** Whose link it is (src/sources). */
  owner: OwnerColumns;
}

type Hit =
  | { kind: 'open'; ref: RecipientRef }
  | { kind: 'click'; ref: RecipientRef; link: TrackedLink; scanner: boolean };

interface Pending {
  hit: Hit;
  done: (recorded: boolean) => void;
  fail: (err: unknown) => void;
}

type DeliveryRow = SourceRefColumns & {
  id: string;
  user_id: number;
  email: string;
  open_count: number;
  /** Seconds since the message was accepted (null: not recorded as sent yet). */
  age: number | null;
};

/** Most hits of one group transaction. */
const MAX_GROUP = 1000;

export class TrackingRecorder {
  private queue: Pending[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly db: Knex,
    private readonly config: Pick<Config, 'clickBotWindowSeconds'>,
    private readonly logger: Logger,
  ) {}

  /** Resolves once the hit's events are committed: true, or false when its message is not (or no longer) known. */
  record(hit: Hit): Promise<boolean> {
    return new Promise((done, fail) => {
      this.queue.push({ hit, done, fail });
      this.flushing ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, MAX_GROUP);
        try {
          const recorded = await this.db.transaction((trx) => this.write(trx, group.map((p) => p.hit)));
          group.forEach((p, i) => p.done(recorded[i]));
        } catch (err) {
          this.logger.warn({ err, hits: group.length }, 'tracking hits not recorded');
          for (const p of group) p.fail(err);
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /**
   * One group: the recipient rows are locked account by account, in id order (opens and clicks
   * change them; a fixed order keeps two groups from deadlocking), one statement per account
   * (named by the token: on Citus each locks one shard's rows, as Citus runs `FOR UPDATE` only
   * within one), then each hit becomes its events.
   */
  private async write(trx: Knex.Transaction, hits: Hit[]): Promise<boolean[]> {
    const perAccount = new Map<number, Set<number>>();
    for (const h of hits) perAccount.set(h.ref.userId, (perAccount.get(h.ref.userId) ?? new Set()).add(h.ref.deliveryId));
    const rows: DeliveryRow[] = [];
    for (const [userId, ids] of [...perAccount].sort((a, b) => a[0] - b[0])) {
      const locked = await lockRowsForHits<DeliveryRow>(trx, userId, [...ids].sort((a, b) => a - b), [
        'id',
        'user_id',
        ...SOURCE_REF_COLUMNS,
        'email',
        'open_count',
      ]);
      rows.push(...locked);
    }
    const byId = new Map(rows.map((r) => [Number(r.id), r]));
    const window = this.config.clickBotWindowSeconds;
    const opened = new Set<number>();
    const events: MessageEvent[] = [];
    const recorded = hits.map((hit) => {
      const row = byId.get(hit.ref.deliveryId);
      if (!row || row.user_id !== hit.ref.userId) return false;
      const ref = { userId: row.user_id, deliveryId: Number(row.id), ...sourceRef(row), email: row.email };
      if (hit.kind === 'open') {
        events.push({ ...ref, type: 'opened' });
        opened.add(ref.deliveryId);
        return true;
      }
      // The link must be one of this message's: its owner's (its send's, or its automation's).
      const { link } = hit;
      if (link.userId !== row.user_id || !ownsLink(ref, link.owner)) return false;
      // A message not yet recorded as sent (age null) was clicked before its outcome was even
      // written: the fastest scanners click within milliseconds of the message leaving, so that
      // is inside the window, not outside it.
      const bot = hit.scanner || (window > 0 && (row.age === null || row.age < window));
      if (!bot && row.open_count === 0 && !opened.has(ref.deliveryId)) {
        events.push({ ...ref, type: 'opened', data: { via: 'click' } });
        opened.add(ref.deliveryId);
      }
      events.push({ ...ref, type: 'clicked', linkId: link.id, data: { url: link.url, suspected_bot: bot } });
      return true;
    });
    await recordMessageEvents(trx, events);
    return recorded;
  }
}

/** Links by id, read once per process: a tracked link's URL and owner never change. */
class LinkCache {
  private readonly links = new Map<number, TrackedLink>();

  constructor(
    private readonly db: Knex,
    private readonly max = 10_000,
  ) {}

  async get(ref: ClickRef): Promise<TrackedLink | undefined> {
    const hit = this.links.get(ref.linkId);
    if (hit) return hit.userId === ref.userId ? hit : undefined;
    const row = await this.db('tracked_links').where({ id: ref.linkId, user_id: ref.userId }).first('id', 'user_id', 'url', ...OWNER_COLUMNS);
    if (!row) return undefined;
    const owner = Object.fromEntries(OWNER_COLUMNS.map((c) => [c, row[c]])) as OwnerColumns;
    const link = { id: Number(row.id), userId: row.user_id, url: row.url, location: new URL(row.url).href, owner };
    if (this.links.size >= this.max) this.links.delete(this.links.keys().next().value as number);
    this.links.set(link.id, link);
    return link;
  }
}

/** The recipient row a pixel's token names (a row written before signed tokens: by its stored token). */
async function openRef(db: Knex, token: string): Promise<RecipientRef | undefined> {
  const found = lookupToken(await secret(db, 'tracking'), token);
  if (!found) return undefined;
  if (found.by === 'key') return found.ref;
  const [row] = await rowsByStoredTokens<{ id: string | number; user_id: number }>(db, [found.token], ['id', 'user_id']);
  return row ? { deliveryId: Number(row.id), userId: row.user_id } : undefined;
}

const notFound = (res: Response) =>
  sendRecipientMessage(res, 404, 'Link not recognised', 'This link is incomplete or was not sent by us. Please use the link exactly as it appears in the email.');

/** GET /t/open/<token>.gif (always the GIF, also for unknown tokens or a failing database) and GET /t/click/<token>. */
export function mountTracking(app: Express, deps: Deps): void {
  const recorder = new TrackingRecorder(deps.db, deps.config, deps.logger);
  const links = new LinkCache(deps.db);

  app.get('/t/open/:file', async (req, res) => {
    const token = String(req.params.file).replace(/\.gif$/i, '');
    try {
      const ref = await openRef(deps.db, token);
      if (ref) await recorder.record({ kind: 'open', ref });
    } catch (err) {
      req.log?.warn({ err }, 'open not recorded');
    }
    res
      .status(200)
      .set({ 'Content-Type': 'image/gif', 'Cache-Control': 'no-store, no-cache, must-revalidate, private', Expires: '0' })
      .end(GIF);
  });

  app.get(
    '/t/click/:token',
    pageErrors(async (req, res) => {
      const ref = readClickToken(await secret(deps.db, 'tracking'), String(req.params.token));
      const link = ref && (await links.get(ref));
      if (!ref || !link) return notFound(res);
      // The person is sent on even when the click cannot be recorded (the database is down, say),
      // but never with a token whose row and link are not one message's (only our key makes one).
      const recorded = await recorder.record({ kind: 'click', ref, link, scanner: isScannerAgent(req.get('user-agent')) }).catch((err) => {
        req.log?.warn({ err }, 'click not recorded');
        return true;
      });
      if (!recorded) return notFound(res);
      res.status(302).set({ Location: link.location, 'Cache-Control': 'no-store', 'Referrer-Policy': 'no-referrer' }).end();
    }),
  );
}
