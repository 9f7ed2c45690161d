import { lookup, Resolver } from 'node:dns/promises';

/**
 * Herald's one DNS client: webhook targets (webhooks/ssrf.ts) and the sender DNS checks (dkim/)
 * ask it. With DNS_SERVERS unset it is the system's resolver (`getaddrinfo` for addresses, so
 * /etc/hosts counts; resolv.conf's servers for TXT and MX); with it, only those servers
 * (`host:port`, `[v6]:port`), for addresses too — the way tests point Herald at a DNS server of
 * their own, and operators at a resolver they trust.
 */
export interface HostAddress {
  address: string;
  family: number;
}

export interface Dns {
  /** Every address of a host name (A and AAAA); throws when it has none. */
  addresses(host: string): Promise<HostAddress[]>;
  /** TXT records, each joined from its strings; [] when the name has none (NXDOMAIN, NODATA). */
  txt(name: string): Promise<string[]>;
  /** MX records; [] when the name has none. */
  mx(name: string): Promise<Array<{ exchange: string; priority: number }>>;
}

/** DNS_SERVERS (`1.2.3.4`, `1.2.3.4:5353`, `[::1]:5353`, `::1`) → the list; throws on a bad entry. */
export function parseServers(list: string): string[] {
  const servers = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  // setServers is the parser of record: it throws on anything it would not use.
  if (servers.length) new Resolver().setServers(servers);
  return servers;
}

const NONE = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN', 'ENONAME']);

function noneIsEmpty<T>(err: unknown): T[] {
  if (NONE.has((err as { code?: string })?.code ?? '')) return [];
  throw err;
}

function makeDns(servers: string[]): Dns {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (servers.length) resolver.setServers(servers);
  return {
    async addresses(host) {
      if (!servers.length) return lookup(host, { all: true, verbatim: true });
      const [v4, v6] = await Promise.all([
        resolver.resolve4(host).catch((e: unknown) => noneIsEmpty<string>(e)),
        resolver.resolve6(host).catch((e: unknown) => noneIsEmpty<string>(e)),
      ]);
      const all = [...v4.map((address) => ({ address, family: 4 })), ...v6.map((address) => ({ address, family: 6 }))];
      if (!all.length) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
      return all;
    },
    async txt(name) {
      try {
        return (await resolver.resolveTxt(name)).map((parts) => parts.join(''));
      } catch (err) {
        return noneIsEmpty(err);
      }
    },
    async mx(name) {
      try {
        return await resolver.resolveMx(name);
      } catch (err) {
        return noneIsEmpty(err);
      }
    },
  };
}

const byServers = new Map<string, Dns>();

/** The resolver for a DNS_SERVERS setting (parsed: config.dnsServers), one per distinct list. */
export function dnsFor(config: { dnsServers: string[] }): Dns {
  const key = config.dnsServers.join(',');
  let dns = byServers.get(key);
  if (!dns) byServers.set(key, (dns = makeDns(config.dnsServers)));
  return dns;
}
