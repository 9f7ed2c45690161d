import { Resolver } from 'node:dns/promises';
import type { AddressInfo } from 'node:net';
import dns2 from 'dns2';

/**
 * A real DNS server in-process (the `dns2` package) on 127.0.0.1, answering from a zone the
 * test fills: A, AAAA, TXT and MX records; NXDOMAIN for names it has nothing for. Herald
 * reaches it through DNS_SERVERS (`servers`); tests read it with `resolve` (node's resolver
 * pointed at it), never through a mocked lookup.
 */
export type RecordType = 'A' | 'AAAA' | 'TXT' | 'MX';

export interface DnsServer {
  /** The DNS_SERVERS value that reaches it. */
  servers: string;
  /** Replaces the records of a name and type (an empty list removes them). */
  set(name: string, type: RecordType, values: string[]): void;
  /** `resolve(name, 'TXT')` as node's dns.promises.resolve, against this server (mailauth's `resolver`). */
  resolve: (name: string, rr: string) => Promise<unknown>;
  queries: Array<{ name: string; type: number }>;
  close(): Promise<void>;
}

const { Packet } = dns2;
const key = (name: string, type: string) => `${name.toLowerCase().replace(/\.$/, '')} ${type}`;

/** TXT strings are at most 255 bytes each: a long value (a DKIM key) is split, as zone files do. */
const chunks = (value: string) => value.match(/.{1,255}/g) ?? [''];

export async function startDnsServer(): Promise<DnsServer> {
  const zone = new Map<string, string[]>();
  const queries: DnsServer['queries'] = [];
  const typeName = new Map<number, RecordType>([
    [Packet.TYPE.A, 'A'],
    [Packet.TYPE.AAAA, 'AAAA'],
    [Packet.TYPE.TXT, 'TXT'],
    [Packet.TYPE.MX, 'MX'],
  ]);
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [q] = request.questions;
      queries.push({ name: q.name, type: q.type });
      const type = typeName.get(q.type);
      const values = type ? zone.get(key(q.name, type)) : undefined;
      const known = [...zone.keys()].some((k) => k.startsWith(`${key(q.name, '')}`) && (zone.get(k)?.length ?? 0) > 0);
      if (!known) response.header.rcode = Packet.RCODE.NXDOMAIN;
      // Plain records, as dns2's own examples write them (its typings want Resource objects).
      const add = (record: object) => response.answers.push(record as never);
      for (const v of values ?? []) {
        const base = { name: q.name, class: Packet.CLASS.IN, ttl: 1 };
        if (type === 'A' || type === 'AAAA') add({ ...base, type: q.type, address: v });
        else if (type === 'TXT') add({ ...base, type: q.type, data: chunks(v) });
        else if (type === 'MX') {
          const [priority, exchange] = v.split(/\s+/);
          add({ ...base, type: q.type, priority: Number(priority), exchange });
        }
      }
      send(response);
    },
  });
  await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = (server.addresses().udp as AddressInfo).port;
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  return {
    servers: `127.0.0.1:${port}`,
    set: (name, type, values) => void zone.set(key(name, type), values),
    resolve: (name, rr) => resolver.resolve(name, rr),
    queries,
    close: () => server.close(),
  };
}
