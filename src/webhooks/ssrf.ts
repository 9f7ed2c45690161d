import { BlockList, isIP } from 'node:net';
import type { Dns } from '../dns';

/**
 * Where a webhook may be sent (issue 11, "SSRF"). A URL names a host; the host is resolved and
 * every address it resolves to must be public: no loopback, private, shared (CGNAT), link-local,
 * unique-local, multicast or reserved address, and never a cloud metadata address. Hosts in
 * WEBHOOK_ALLOW_HOSTS (names as written in the URL, or addresses) may be private or local — the
 * way tests and development reach 127.0.0.1 — but metadata addresses stay refused even then.
 *
 * The check runs on save and again before every request, and the request connects to the
 * address that was checked (see http-post.ts): a name that resolves to something else by then
 * (DNS rebinding) cannot redirect the request. Names are resolved by Herald's resolver
 * (src/dns.ts: the system's, or DNS_SERVERS).
 */
const METADATA = new BlockList();
METADATA.addAddress('169.254.169.254', 'ipv4');
METADATA.addAddress('fd00:ec2::254', 'ipv6');

const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (and the metadata address)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64: could map to any IPv4 address
  ['fc00::', 7], // unique-local (fd00:ec2::254 among them)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');
}

export interface ResolvedTarget {
  url: URL;
  /** The address to connect to: checked, so the request goes nowhere else. */
  address: string;
  family: 4 | 6;
}

/** Why a URL may not be called (a sentence for the VAL message and the delivery's error). */
export class RefusedTarget extends Error {}

/**
 * `::ffff:10.0.0.1` (or `::ffff:a00:1`, as URLs write it) is 10.0.0.1: an IPv4-mapped IPv6
 * address is judged as the IPv4 address it is.
 */
function normalize(address: string): { address: string; family: 4 | 6 } {
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return { address: dotted[1], family: 4 };
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const [hi, lo] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
    return { address: [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.'), family: 4 };
  }
  return { address: address.toLowerCase(), family: isIP(address) === 6 ? 6 : 4 };
}

function isMetadata(address: string, family: 4 | 6): boolean {
  return METADATA.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

export function isPublicAddress(address: string): boolean {
  const a = normalize(address);
  return !NOT_PUBLIC.check(a.address, a.family === 4 ? 'ipv4' : 'ipv6');
}

/** The URL's host without IPv6 brackets, lower-cased. */
function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** Parses a webhook URL: http or https only, no credentials. */
export function parseWebhookUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RefusedTarget('The :attribute must be a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RefusedTarget('The :attribute must start with one of the following: http://, https://.');
  }
  if (url.username || url.password) throw new RefusedTarget('The :attribute must not contain a user name or password.');
  return url;
}

/**
 * Resolves the URL's host and checks every address it has (one bad address refuses the host: a
 * resolver may hand out any of them). Returns the first address, the one to connect to.
 */
export async function resolveTarget(text: string, allowHosts: string[], dns: Dns): Promise<ResolvedTarget> {
  const url = parseWebhookUrl(text);
  const host = hostOf(url);
  let addresses: Array<{ address: string; family: number }>;
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await dns.addresses(host);
    } catch {
      throw new RefusedTarget(`The :attribute host ${host} could not be resolved.`);
    }
  }
  if (addresses.length === 0) throw new RefusedTarget(`The :attribute host ${host} could not be resolved.`);
  // The host as the URL names it (a name, or an address literal): a name that merely resolves to
  // an allowed address is not allowed by that.
  const hostAllowed = allowHosts.includes(host) || (isIP(host) > 0 && allowHosts.includes(normalize(host).address));
  for (const raw of addresses) {
    const a = normalize(raw.address);
    if (isMetadata(a.address, a.family)) throw new RefusedTarget('The :attribute must not point to a metadata address.');
    if (hostAllowed) continue;
    if (!isPublicAddress(a.address)) {
      throw new RefusedTarget('The :attribute must not point to a loopback, private or link-local address.');
    }
  }
  return { url, ...normalize(addresses[0].address) };
}
