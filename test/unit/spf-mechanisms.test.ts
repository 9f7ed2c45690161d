import { spfMechanisms } from '../../src/dkim/records';
import type { RouteConfig } from '../../src/routes/types';

/** The SPF hint of GET /sender/dns names every relay Herald hands mail to (issue 36: several delivery routes). */
const base = { masterKey: undefined, dataDir: '/tmp', bounceDomain: undefined, inboundHostname: 'herald.example.com' } as const;
const route = (name: string, url: string): RouteConfig => ({ name, url, weight: 1, poolSize: 5, streams: ['marketing', 'system'] });

test('every route’s host once, in the order configured; an address as ip4/ip6', () => {
  const routes = [
    route('ses', 'smtp://AKIA:secret@email-smtp.eu-west-1.amazonaws.com:587'),
    route('own', 'smtps://u:p@Relay.Example.NET:465'),
    route('own2', 'smtp://relay.example.net:2525'),
    route('v4', 'smtp://192.0.2.10:25'),
    route('v6', 'smtp://[2001:db8::1]:25'),
  ];
  expect(spfMechanisms({ ...base, routes })).toEqual([
    'a:email-smtp.eu-west-1.amazonaws.com',
    'a:relay.example.net',
    'ip4:192.0.2.10',
    'ip6:2001:db8::1',
  ]);
});

test('no relay (the outbox): the inbound host', () => {
  expect(spfMechanisms({ ...base, routes: [] })).toEqual(['a:herald.example.com']);
});
