import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Dns } from '../dns';

/**
 * Where a webhook may be sent (issue 11, "SSRF"). A URL names a host; the host is resolved and
 * every address it resolves to must be public: no loopback, private, shared (CGNAT), link-local,
 * unique-local, multicast or reserved address, nor an IPv6 form embedding one (IPv4-mapped,
 * -compatible, -translated, NAT64, 6to4, Teredo), and never a cloud metadata address. Hosts in
 * WEBHOOK_ALLOW_HOSTS (names as written in the URL, or addresses) may be private or local — the
 * way tests and development reach 127.0.0.1 — but metadata addresses stay refused even then.
 *
 * The check runs on save and again before every request, and the request connects to the
 * address that was checked (see http-post.ts): a name that resolves to something else by then
 * (DNS rebinding) cannot redirect the request. Names are resolved by Herald's resolver
 * (src/dns.ts: the system's, or DNS_SERVERS).
 */
const METADATA = new Set(['169.254.169.254', 'fd00:ec2::254']);

/**
 * IPv6 forms that carry an IPv4 address inside them: reaching one of them reaches that IPv4
 * address (or, for Teredo, the client's NAT), so it is judged as the IPv4 address(es) it embeds.
 * ipaddr.js names the ranges; it has no name for the deprecated IPv4-compatible `::a.b.c.d`
 * (::/96), which Linux still routes to a.b.c.d through the sit tunnel, so that one is here by hand.
 */
const NAT64 = ipaddr.IPv6.parse('64:ff9b::');
const IPV4_COMPATIBLE = ipaddr.IPv6.parse('::');

function embeddedIPv4(a: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const b = a.toByteArray();
  const v4 = (at: number, xor = 0) => new ipaddr.IPv4(b.slice(at, at + 4).map((x) => x ^ xor));
  switch (a.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d, IPv4-translated
      return [v4(12)];
    case 'rfc6052': // 64:ff9b::a.b.c.d (NAT64); the local-use 64:ff9b:1::/48 places it as its network says: refused whole
      return a.match(NAT64, 96) ? [v4(12)] : undefined;
    case '6to4': // 2002:AABB:CCDD::/48
      return [v4(2)];
    case 'teredo': // 2001:0:server(32 bits):flags:port:client(32 bits, inverted)
      return [v4(4), v4(12, 0xff)];
    default:
      // IPv4-compatible ::a.b.c.d (but not :: and ::1, which have ranges of their own).
      return a.match(IPV4_COMPATIBLE, 96) && a.range() === 'unicast' ? [v4(12)] : undefined;
  }
}

/** Every address a connection to `address` reaches: itself, and the IPv4 addresses it embeds. */
function reached(address: string): ipaddr.IPv4[] | [ipaddr.IPv6] {
  const a = ipaddr.parse(address);
  if (a.kind() === 'ipv4') return [a as ipaddr.IPv4];
  return embeddedIPv4(a as ipaddr.IPv6) ?? [a as ipaddr.IPv6];
}

function isMetadata(address: string): boolean {
  return reached(address).some((a) => METADATA.has(a.toString()));
}

/**
 * Public: ipaddr.js's `unicast`, i.e. in none of the ranges it names (loopback, private,
 * carrier-grade NAT, link-local, unique-local, multicast, reserved, documentation, …), and for
 * an IPv6 form that embeds IPv4 addresses, every one of those public.
 */
export function isPublicAddress(address: string): boolean {
  return reached(address).every((a) => a.range() === 'unicast');
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
 * address is connected to as the IPv4 address it is. Other addresses in their canonical form.
 */
function normalize(address: string): { address: string; family: 4 | 6 } {
  const a = ipaddr.process(address);
  return { address: a.toString(), family: a.kind() === 'ipv4' ? 4 : 6 };
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
  const hostAllowed = allowHosts.includes(host) || (isIP(host) > 0 && allowHosts.some((h) => isIP(h) > 0 && normalize(h).address === normalize(host).address));
  for (const raw of addresses) {
    const a = normalize(raw.address);
    if (isMetadata(a.address)) throw new RefusedTarget('The :attribute must not point to a metadata address.');
    if (hostAllowed) continue;
    if (!isPublicAddress(a.address)) {
      throw new RefusedTarget('The :attribute must not point to a loopback, private or link-local address.');
    }
  }
  return { url, ...normalize(addresses[0].address) };
}
