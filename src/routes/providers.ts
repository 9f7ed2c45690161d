import type { Dns } from '../dns';

/**
 * The receiving provider of a recipient domain: who would block a route (issue 36). A block by
 * Gmail holds for every domain whose mail Google receives, so a block is recorded per provider,
 * not per domain. The provider is read from the domain's MX (the lowest preference), by the MX
 * host's suffix; a domain whose MX is no provider's below is its own provider.
 */

/** MX host suffixes (a whole label or more) → provider name. */
const MX_PROVIDERS: ReadonlyArray<readonly [suffix: string, provider: string]> = [
  // Gmail and Google Workspace: aspmx.l.google.com, smtp.google.com, gmail-smtp-in.l.google.com.
  ['google.com', 'google'],
  ['googlemail.com', 'google'],
  // Outlook.com, Hotmail, Microsoft 365 (*.mail.protection.outlook.com).
  ['outlook.com', 'microsoft'],
  ['hotmail.com', 'microsoft'],
  // Yahoo and AOL: mta5.am0.yahoodns.net, mx-aol.mail.gm0.yahoodns.net.
  ['yahoodns.net', 'yahoo'],
  ['yahoo.com', 'yahoo'],
  ['aol.com', 'yahoo'],
  // iCloud: mx01.mail.icloud.com.
  ['icloud.com', 'apple'],
  ['apple.com', 'apple'],
  ['yandex.net', 'yandex'],
  ['yandex.ru', 'yandex'],
  ['zoho.com', 'zoho'],
  ['zoho.eu', 'zoho'],
  ['zohomail.com', 'zoho'],
  ['protonmail.ch', 'protonmail'],
  // GMX, WEB.DE and IONOS (1&1) share one infrastructure and one reputation system.
  ['gmx.net', 'united-internet'],
  ['gmx.com', 'united-internet'],
  ['gmx.de', 'united-internet'],
  ['web.de', 'united-internet'],
  ['kundenserver.de', 'united-internet'],
  ['ionos.de', 'united-internet'],
  ['ionos.com', 'united-internet'],
  ['mail.ru', 'mail.ru'],
  // Fastmail: in1-smtp.messagingengine.com.
  ['messagingengine.com', 'fastmail'],
  ['fastmail.com', 'fastmail'],
  ['comcast.net', 'comcast'],
  ['t-online.de', 't-online'],
  ['orange.fr', 'orange'],
];

/** The provider for an MX host, or undefined when it is nobody's in the table. */
export function providerOfMx(host: string): string | undefined {
  const h = host.toLowerCase().replace(/\.$/, '');
  return MX_PROVIDERS.find(([suffix]) => h === suffix || h.endsWith(`.${suffix}`))?.[1];
}

/** An answer is kept this long; a failed lookup only briefly (the next one may work). */
const TTL_MS = 3_600_000;
const FAILED_TTL_MS = 60_000;
/** Domains kept per resolver at most: the oldest go first. */
const MAX_ENTRIES = 10_000;

interface Entry {
  provider: Promise<string>;
  expires: number;
}

/** One cache per resolver (DNS_SERVERS), for the life of the process. */
const caches = new WeakMap<Dns, Map<string, Entry>>();

/**
 * The receiving provider of `domain` (a recipient's domain): `google`, `microsoft`, `yahoo`, … or,
 * for a domain whose lowest-preference MX no table row names, whose MX cannot be read, or that has
 * none, the domain itself (lower-cased). Cached an hour, at most MAX_ENTRIES domains; concurrent
 * lookups of one domain share one query.
 */
export function providerOf(dns: Dns, domain: string, now: number = Date.now()): Promise<string> {
  const name = domain.trim().toLowerCase().replace(/\.$/, '');
  let cache = caches.get(dns);
  if (!cache) caches.set(dns, (cache = new Map()));
  const hit = cache.get(name);
  if (hit && hit.expires > now) return hit.provider;
  if (hit) cache.delete(name);
  while (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  const entry: Entry = { provider: Promise.resolve(name), expires: now + TTL_MS };
  entry.provider = lookup(dns, name).then(({ provider, failed }) => {
    if (failed) entry.expires = now + FAILED_TTL_MS;
    return provider;
  });
  cache.set(name, entry);
  return entry.provider;
}

/** Never rejects: a lookup that failed (timeout, SERVFAIL) makes the domain stand for itself, not for long. */
async function lookup(dns: Dns, name: string): Promise<{ provider: string; failed: boolean }> {
  let mx: Array<{ exchange: string; priority: number }>;
  try {
    mx = await dns.mx(name);
  } catch {
    return { provider: name, failed: true };
  }
  // The lowest preference is where mail goes first; a null MX ("0 .", RFC 7505) names no host.
  const first = mx.filter((r) => r.exchange && r.exchange !== '.').sort((a, b) => a.priority - b.priority)[0];
  return { provider: (first && providerOfMx(first.exchange)) ?? name, failed: false };
}
