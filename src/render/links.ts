import type { Knex } from 'knex';
import { columnsOf, OWNER_COLUMNS, type Owner } from '../sources';

/**
 * Click tracking at render: the links of a design are found once per send or automation (its
 * owner, src/sources), registered in `tracked_links`, and their hrefs replaced by a
 * `((__click_<id>))` placeholder that each recipient's message fills with its own signed
 * `/t/click/<token>` URL (render.ts).
 *
 * Tracked: every `http(s)` href of an `<a>` or `<area>`. Left as they are: `mailto:` and any
 * other scheme; links with a `data-herald-notrack` attribute; hrefs holding a placeholder
 * (`((unsubscribe_preferences))`, `((website))`: per-recipient values, so there is no one URL
 * to redirect to); links to Herald's own unsubscribe and preference pages; URLs over 4 KB.
 */
const LINK_TAG = /<(a|area)\b((?:[^>"']|"[^"]*"|'[^']*')*)>/gi;
const HREF = /(\shref\s*=\s*)("([^"]*)"|'([^']*)'|([^\s"'>]+))/i;
const NOTRACK = /\sdata-herald-notrack\b/i;
const MAX_URL = 4096;

const NAMED: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>', nbsp: '\u00a0' };

/** An attribute value as the browser reads it: character references decoded. */
function decodeAttribute(v: string): string {
  return v.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return NAMED[ref.toLowerCase()] ?? m;
  });
}

function parses(url: string): boolean {
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

function trackable(url: string, publicUrl: string): boolean {
  if (!/^https?:\/\/[^/\s]/i.test(url) || url.length > MAX_URL || url.includes('((') || !parses(url)) return false;
  const own = url.toLowerCase();
  const base = publicUrl.toLowerCase();
  return !own.startsWith(`${base}/unsubscribe`) && !own.startsWith(`${base}/preferences`);
}

interface FoundLink {
  /** Offsets of the href's value (with its quotes) in the HTML. */
  start: number;
  end: number;
  url: string;
}

function findLinks(html: string, publicUrl: string): FoundLink[] {
  const found: FoundLink[] = [];
  for (const tag of html.matchAll(LINK_TAG)) {
    const attrs = tag[2];
    if (NOTRACK.test(attrs)) continue;
    const href = HREF.exec(attrs);
    if (!href) continue;
    const url = decodeAttribute((href[3] ?? href[4] ?? href[5]).trim());
    if (!trackable(url, publicUrl)) continue;
    const start = tag.index + 1 + tag[1].length + href.index + href[1].length;
    found.push({ start, end: start + href[2].length, url });
  }
  return found;
}

/** The distinct URLs a design's HTML would have tracked, in order of appearance. */
export function trackedUrls(html: string, publicUrl: string): string[] {
  return [...new Set(findLinks(html, publicUrl).map((l) => l.url))];
}

/** The HTML with each tracked link's href replaced by its link's placeholder. */
export function withClickPlaceholders(html: string, publicUrl: string, ids: ReadonlyMap<string, number>): string {
  let out = '';
  let last = 0;
  for (const link of findLinks(html, publicUrl)) {
    const id = ids.get(link.url);
    if (id === undefined) continue;
    out += html.slice(last, link.start) + `"((__click_${id}))"`;
    last = link.end;
  }
  return out + html.slice(last);
}

/**
 * Registers the links of one owner's designs (src/sources: a single send, or an automation, whose
 * emails share their links): existing ones are kept with their counters, so a design compiled
 * again, or another email of the same automation with the same link, finds the same row. Returns
 * the id of each URL.
 */
export async function registerLinks(db: Knex, userId: number, owner: Owner, urls: string[]): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  // Twice at most: a row another process inserted after this statement's snapshot is only
  // found by the next statement.
  for (let round = 0; round < 2 && ids.size < urls.length; round++) {
    for (const [url, id] of await upsertLinks(db, userId, owner, urls.filter((u) => !ids.has(u)))) ids.set(url, id);
  }
  return ids;
}

/**
 * One statement: insert the URLs not yet registered, and read back every URL's row. The owner
 * columns, each `coalesce(…, 0)`, are those of the unique index `tracked_links_owner_url`, which
 * the conflict target must name.
 */
async function upsertLinks(db: Knex, userId: number, owner: Owner, urls: string[]): Promise<Array<[string, number]>> {
  if (urls.length === 0) return [];
  const columns = columnsOf(owner) as Record<string, number | null>;
  const keyed = OWNER_COLUMNS.map((c) => `coalesce(${c}, 0)`).join(', ');
  const { rows } = await db.raw(
    `WITH v AS (SELECT url, n FROM unnest(?::text[]) WITH ORDINALITY AS v(url, n)),
     added AS (
       INSERT INTO tracked_links (user_id, ${OWNER_COLUMNS.join(', ')}, url)
       SELECT ?, ${OWNER_COLUMNS.map(() => '?::integer').join(', ')}, url FROM v ORDER BY n
       ON CONFLICT (user_id, ${keyed}, md5(url)) DO NOTHING
       RETURNING id, url)
     SELECT id, url FROM added
     UNION ALL
     SELECT l.id, l.url FROM tracked_links l JOIN v ON md5(l.url) = md5(v.url) AND l.url = v.url
     WHERE l.user_id = ? AND ${OWNER_COLUMNS.map((c) => `coalesce(l.${c}, 0) = ?`).join(' AND ')}`,
    [urls, userId, ...OWNER_COLUMNS.map((c) => columns[c]), userId, ...OWNER_COLUMNS.map((c) => columns[c] ?? 0)],
  );
  return (rows as Array<{ id: string; url: string }>).map((r) => [r.url, Number(r.id)]);
}
