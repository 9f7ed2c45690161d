import type { Knex } from 'knex';
import { isIP } from 'node:net';
import type { Config } from '../config';
import type { Dns } from '../dns';
import { DnsRecordStatus, KeyState } from '../states';
import { ensureKey, liveKeys, promotePending, type KeyRow } from './keys';
import { forgetKeys } from './sign';

/**
 * The DNS records a sending domain needs, and checking them. `dkim`: the TXT record of each key
 * that is not retired (the active one, and a rotation's pending one); `bounce`: the MX of
 * BOUNCE_DOMAIN, pointing at INBOUND_HOSTNAME; `spf`: where the envelope sender's domain is
 * checked (BOUNCE_DOMAIN, or the sender's own domain without it) — a hint, since only the
 * operator knows every relay that sends; `dmarc`: a hint at `_dmarc.<domain>` (DMARC aligns
 * through DKIM's d=, the From domain).
 */
export type Purpose = 'dkim' | 'bounce' | 'spf' | 'dmarc';

export interface DnsRecord {
  purpose: Purpose;
  type: 'TXT' | 'MX';
  host: string;
  value: string;
  status: DnsRecordStatus;
}

export interface DomainRecords {
  domain: string;
  records: DnsRecord[];
}

type RecordConfig = Pick<Config, 'masterKey' | 'dataDir' | 'bounceDomain' | 'inboundHostname' | 'routes'>;

export const dkimValue = (key: Pick<KeyRow, 'public_key'>) => `v=DKIM1; k=rsa; p=${key.public_key}`;

/**
 * The SPF mechanisms that allow Herald's mail: each relay Herald hands mail to (every delivery
 * route's host, in the order configured, once each; SMTP_URL alone is one), else the inbound host
 * — `a:` for a host name, `ip4:`/`ip6:` for an address (`a:` takes a domain only).
 */
export function spfMechanisms(config: RecordConfig): string[] {
  const hosts = config.routes.length ? config.routes.map((r) => new URL(r.url).hostname) : [config.inboundHostname];
  return [...new Set(hosts.map((h) => h.replace(/^\[(.*)\]$/, '$1').toLowerCase()))].map((host) => {
    const family = isIP(host);
    return family ? `ip${family}:${host}` : `a:${host}`;
  });
}

function describe(config: RecordConfig, domain: string, keys: KeyRow[]): DnsRecord[] {
  const checks = keys.find((k) => k.state === KeyState.Active)?.checks ?? {};
  const status = (p: Purpose) => checks[p] ?? DnsRecordStatus.Unchecked;
  const records: DnsRecord[] = keys.map((k) => ({
    purpose: 'dkim',
    type: 'TXT',
    host: `${k.selector}._domainkey.${domain}`,
    value: dkimValue(k),
    status: k.dns_status,
  }));
  if (config.bounceDomain) {
    records.push({ purpose: 'bounce', type: 'MX', host: config.bounceDomain, value: `10 ${config.inboundHostname}`, status: status('bounce') });
  }
  records.push(
    { purpose: 'spf', type: 'TXT', host: config.bounceDomain ?? domain, value: `v=spf1 ${spfMechanisms(config).join(' ')} ~all`, status: status('spf') },
    { purpose: 'dmarc', type: 'TXT', host: `_dmarc.${domain}`, value: 'v=DMARC1; p=none; adkim=r; aspf=r', status: status('dmarc') },
  );
  return records;
}

/** The records of an account's (or, `userId` null, the installation's) domain, with the last check's statuses. */
export async function domainRecords(db: Knex, config: RecordConfig, userId: number | null, domain: string): Promise<DomainRecords> {
  let keys = await liveKeys(db, userId, domain);
  if (!keys.some((k) => k.state === KeyState.Active)) {
    await ensureKey(db, config, userId, domain);
    keys = await liveKeys(db, userId, domain);
  }
  return { domain, records: describe(config, domain, keys) };
}

/** Tags of a `k=v; k=v` record (whitespace inside values removed, as DKIM's p= allows). */
function tags(record: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of record.split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out.set(part.slice(0, i).trim().toLowerCase(), part.slice(i + 1).replace(/\s+/g, ''));
  }
  return out;
}

async function checkDkim(dns: Dns, host: string, key: KeyRow): Promise<DnsRecordStatus> {
  const found = (await dns.txt(host)).map(tags).filter((t) => t.has('p'));
  if (!found.length) return DnsRecordStatus.Missing;
  return found.some((t) => t.get('p') === key.public_key && (t.get('k') ?? 'rsa') === 'rsa') ? DnsRecordStatus.Verified : DnsRecordStatus.Mismatch;
}

const bareHost = (h: string) => h.toLowerCase().replace(/\.$/, '');

async function checkOne(dns: Dns, config: RecordConfig, record: DnsRecord, key: KeyRow | undefined): Promise<DnsRecordStatus> {
  switch (record.purpose) {
    case 'dkim':
      return checkDkim(dns, record.host, key!);
    case 'bounce': {
      const mx = await dns.mx(record.host);
      if (!mx.length) return DnsRecordStatus.Missing;
      return mx.some((m) => bareHost(m.exchange) === bareHost(config.inboundHostname)) ? DnsRecordStatus.Verified : DnsRecordStatus.Mismatch;
    }
    case 'spf': {
      const spf = (await dns.txt(record.host)).filter((t) => /^v=spf1(\s|$)/i.test(t));
      if (!spf.length) return DnsRecordStatus.Missing;
      // Verified when the one SPF record allows every relay (its mechanisms in any order, among others).
      const published = new Set(spf.length === 1 ? spf[0].toLowerCase().split(/\s+/).map((m) => m.replace(/^[+?~-]/, '')) : []);
      return spf.length === 1 && spfMechanisms(config).every((m) => published.has(m)) ? DnsRecordStatus.Verified : DnsRecordStatus.Mismatch;
    }
    case 'dmarc': {
      const dmarc = (await dns.txt(record.host)).filter((t) => /^v=DMARC1\s*(;|$)/i.test(t));
      if (!dmarc.length) return DnsRecordStatus.Missing;
      return dmarc.length === 1 ? DnsRecordStatus.Verified : DnsRecordStatus.Mismatch;
    }
  }
}

/**
 * Looks every record up now and keeps the statuses. A rotation's pending key whose record is
 * published and matches becomes the active key (the old one is retired and stops signing).
 * A lookup that fails (timeout, SERVFAIL) keeps the record `unchecked`.
 */
export async function checkRecords(db: Knex, config: RecordConfig, dns: Dns, userId: number | null, domain: string): Promise<DomainRecords> {
  const { records } = await domainRecords(db, config, userId, domain);
  const keys = await liveKeys(db, userId, domain);
  const keyOf = (host: string) => keys.find((k) => `${k.selector}._domainkey.${domain}` === host);
  const statuses = await Promise.all(
    records.map((r) => checkOne(dns, config, r, keyOf(r.host)).catch((): DnsRecordStatus => DnsRecordStatus.Unchecked)),
  );
  const domainChecks: Record<string, DnsRecordStatus> = {};
  records.forEach((r, i) => {
    if (r.purpose !== 'dkim') domainChecks[r.purpose] = statuses[i];
  });
  let promoted = false;
  await db.transaction(async (trx) => {
    for (const [i, r] of records.entries()) {
      if (r.purpose !== 'dkim') continue;
      const key = keyOf(r.host)!;
      const verified = statuses[i] === DnsRecordStatus.Verified;
      await trx('dkim_keys')
        .where({ id: key.id })
        .update({
          dns_status: statuses[i],
          checked_at: trx.fn.now(),
          ...(verified && !key.verified_at ? { verified_at: trx.fn.now() } : {}),
          ...(key.state === KeyState.Active ? { checks: JSON.stringify(domainChecks) } : {}),
        });
    }
  });
  const pending = keys.find((k) => k.state === KeyState.Pending);
  if (pending && statuses[records.findIndex((r) => r.host === `${pending.selector}._domainkey.${domain}`)] === DnsRecordStatus.Verified) {
    await promotePending(db, pending);
    promoted = true;
  }
  if (promoted) forgetKeys(db);
  return domainRecords(db, config, userId, domain);
}
