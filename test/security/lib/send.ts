import type { Express } from 'express';
import request from 'supertest';
import type { Method } from '../../../src/http/routes';
import type { TestAccount } from '../../helpers/app';

export type Encoding = 'multipart' | 'urlencoded' | 'json';

/** One generated request: what goes in the query string, what in the body, and how. */
export interface FuzzRequest {
  method: Method;
  path: string;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  encoding: Encoding;
}

/**
 * What a form encoding can carry of a string: UTF-8 has no lone surrogates, so they travel
 * as U+FFFD (what any browser or HTTP client sends for them).
 */
export function wire(s: string): string {
  return Buffer.from(s, 'utf8').toString('utf8');
}

/** A value as form fields: nested arrays and objects in bracket notation (`a[0]`, `a[b]`). */
export function flatten(value: unknown, name: string): Array<[string, string]> {
  if (value === undefined) return [];
  if (value === null) return [[name, '']];
  if (Array.isArray(value)) return value.flatMap((v, i) => flatten(v, `${name}[${i}]`));
  if (typeof value === 'object') return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => flatten(v, `${name}[${k}]`));
  return [[name, wire(String(value))]];
}

export function pairsOf(fields: Record<string, unknown>): Array<[string, string]> {
  return Object.entries(fields).flatMap(([k, v]) => flatten(v, k));
}

const enc = (s: string) => encodeURIComponent(wire(s));

export function queryString(query: Record<string, unknown>): string {
  const pairs = pairsOf(query);
  return pairs.length ? `?${pairs.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&')}` : '';
}

export function send(app: Express, account: TestAccount, r: FuzzRequest): request.Test {
  const url = `${r.path}${queryString(r.query)}`;
  const t = request(app)[r.method](url).set(account.headers);
  if (r.method !== 'post') return t;
  switch (r.encoding) {
    case 'json':
      return t.set('Content-Type', 'application/json').send(JSON.stringify(r.body) ?? '{}');
    case 'urlencoded':
      return t.type('form').send(pairsOf(r.body).map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&'));
    case 'multipart': {
      const pairs = pairsOf(r.body);
      if (pairs.length === 0) return t.type('form').send('');
      let m = t;
      for (const [k, v] of pairs) m = m.field(k, v);
      return m;
    }
  }
}

/** The request, readable in a failure message (long strings shortened). */
export function describeRequest(r: FuzzRequest): string {
  return JSON.stringify(r, (_k, v) => (typeof v === 'string' && v.length > 120 ? `${v.slice(0, 60)}…(${v.length} chars)` : v));
}
