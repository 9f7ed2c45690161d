import { Client } from 'pg';
import pino from 'pino';
import request from 'supertest';
import { rotateKeys } from '../../src/accounts/accounts.service';
import { KEYS_CHANNEL, KEYS_LISTENER_APP, KeyCache } from '../../src/accounts/key-cache';
import { hashSecret } from '../../src/accounts/keys';
import { createApp } from '../../src/app';
import { makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';

/**
 * Verified key pairs kept in memory (src/accounts/key-cache.ts): what is served from memory,
 * and that every way an account's keys change reaches the cache before the old pair could be
 * used again.
 */
const { db, config, mailer } = setupApp();
const silent = pino({ level: 'silent' });
const keys = new KeyCache({ url: testDatabaseUrl(), logger: silent });
const app = createApp({ config, db, logger: silent, mailer, keys });

beforeAll(() => keys.start());
afterAll(() => keys.stop());

/** Counts the key lookups (queries on `accounts`) made through knex while `fn` runs. */
async function keyLookups(fn: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const count = (q: { sql: string }) => {
    if (/from "accounts"/i.test(q.sql)) n += 1;
  };
  db.on('query', count);
  try {
    await fn();
  } finally {
    db.off('query', count);
  }
  return n;
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const get = (headers: { PublicKey: string; SecretKey: string }) => request(app).get('/notification-recipients').set(headers);
const statusOf = async (headers: { PublicKey: string; SecretKey: string }) => (await get(headers)).status;

describe('key pairs in memory', () => {
  let a: TestAccount;
  beforeAll(async () => {
    a = await makeAccount(db, 'Cached');
    await until('the cache to listen', () => keys.active);
  });

  it('asks the database once; the next requests with the pair are answered from memory', async () => {
    expect(await keyLookups(async () => expect(await statusOf(a.headers)).toBe(200))).toBe(1);
    expect(await keyLookups(async () => {
      for (let i = 0; i < 3; i += 1) expect(await statusOf(a.headers)).toBe(200);
    })).toBe(0);
  });

  it('refuses a wrong secret for a remembered public key, and never remembers a failure', async () => {
    await get(a.headers);
    const wrong = { PublicKey: a.public_key, SecretKey: `${a.secret_key}x` };
    const res = await get(wrong);
    expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { status: 'failed', errors: 'Invalid PublicKey or SecretKey' } });
    expect(await keyLookups(async () => expect(await statusOf(wrong)).toBe(401))).toBe(1);
  });
});

describe('key rotation reaches the cache before rotateKeys returns', () => {
  it('the old pair is forgotten the moment rotateKeys returns; the new pair works', async () => {
    const a = await makeAccount(db, 'Rotated');
    expect(await statusOf(a.headers)).toBe(200);
    expect(keys.lookup(a.public_key, hashSecret(a.secret_key))).toBe(a.id);

    const fresh = (await rotateKeys(db, a.id))!;
    // Synchronously after the await: the cache confirmed before rotateKeys resolved.
    expect(keys.lookup(a.public_key, hashSecret(a.secret_key))).toBeUndefined();
    expect(await statusOf(a.headers)).toBe(401);
    expect(await statusOf({ PublicKey: a.public_key, SecretKey: fresh.secret_key })).toBe(401);
    expect(await statusOf({ PublicKey: fresh.public_key, SecretKey: fresh.secret_key })).toBe(200);
  });

  it('waits for every listening cache, and warns about one that does not confirm', async () => {
    const a = await makeAccount(db, 'Silent listener');
    // A session that listens like a cache but never confirms (a hung API process).
    const mute = new Client({ connectionString: testDatabaseUrl(), application_name: KEYS_LISTENER_APP });
    await mute.connect();
    try {
      await mute.query(`LISTEN ${KEYS_CHANNEL}`);
      const warnings: Array<{ unconfirmed: number[] }> = [];
      const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line)) });
      expect(await statusOf(a.headers)).toBe(200);
      const fresh = await rotateKeys(db, a.id, { logger, confirmMs: 300 });
      expect(fresh?.id).toBe(a.id);
      expect(warnings).toHaveLength(1);
      const mutePid = (mute as unknown as { processID: number }).processID;
      expect(warnings[0].unconfirmed).toContain(mutePid);
      // The real cache confirmed: it is not among the silent ones, and refuses the old pair.
      expect(warnings[0].unconfirmed).not.toContain(keys.sessionPid);
      expect(await statusOf(a.headers)).toBe(401);
    } finally {
      await mute.end();
    }
  });

  it('a change made in SQL (an operator’s UPDATE) drops the cached pair too', async () => {
    const a = await makeAccount(db, 'Operator');
    expect(await statusOf(a.headers)).toBe(200);
    await db('accounts').where({ id: a.id }).update({ secret_key_hash: hashSecret('sk_set_by_hand') });
    await until('the cache to drop the pair', () => keys.lookup(a.public_key, hashSecret(a.secret_key)) === undefined);
    expect(await statusOf(a.headers)).toBe(401);
    expect(await statusOf({ PublicKey: a.public_key, SecretKey: 'sk_set_by_hand' })).toBe(200);
  });

  it('an answer from the database that raced an invalidation is not remembered', async () => {
    const [a, other] = await Promise.all([makeAccount(db, 'Race'), makeAccount(db, 'Race other')]);
    const digest = hashSecret(a.secret_key);
    const ticket = keys.ticket();
    // Any key change in between (here another account's) and the answer read before it is stale.
    await rotateKeys(db, other.id);
    keys.remember(a.public_key, digest, a.id, ticket);
    expect(keys.lookup(a.public_key, digest)).toBeUndefined();
    keys.remember(a.public_key, digest, a.id, keys.ticket());
    expect(keys.lookup(a.public_key, digest)).toBe(a.id);
  });
});

describe('without its listening session', () => {
  it('serves nothing from memory until it listens again, then remembers again', async () => {
    const a = await makeAccount(db, 'Outage');
    expect(await statusOf(a.headers)).toBe(200);
    const pid = keys.sessionPid!;
    await db.raw('SELECT pg_terminate_backend(?::int)', [pid]); // ::int: Citus adds a pg_terminate_backend(bigint, …) of its own
    await until('the cache to notice', () => !keys.active);
    // Every request asks the database meanwhile, and a rotation in the gap is honoured.
    expect(await keyLookups(async () => expect(await statusOf(a.headers)).toBe(200))).toBe(1);
    expect(await keyLookups(async () => expect(await statusOf(a.headers)).toBe(200))).toBe(1);
    const fresh = (await rotateKeys(db, a.id))!;
    expect(await statusOf(a.headers)).toBe(401);
    await until('the cache to listen again', () => keys.active && keys.sessionPid !== pid);
    expect(await statusOf(a.headers)).toBe(401);
    const headers = { PublicKey: fresh.public_key, SecretKey: fresh.secret_key };
    expect(await keyLookups(async () => expect(await statusOf(headers)).toBe(200))).toBe(1);
    expect(await keyLookups(async () => expect(await statusOf(headers)).toBe(200))).toBe(0);
  });
});

describe('bounds', () => {
  const small = new KeyCache({ url: testDatabaseUrl(), logger: silent, maxEntries: 2, ttlMs: 1000 });
  beforeAll(async () => {
    await small.start();
    await until('the small cache to listen', () => small.active);
  });
  afterAll(() => small.stop());

  it('keeps at most maxEntries pairs (the oldest goes) and each for at most ttlMs', () => {
    const d = hashSecret('sk_x');
    const now = Date.now();
    small.remember('pk_1', d, 1, small.ticket(), now);
    small.remember('pk_2', d, 2, small.ticket(), now);
    small.remember('pk_3', d, 3, small.ticket(), now);
    expect([small.lookup('pk_1', d, now), small.lookup('pk_2', d, now), small.lookup('pk_3', d, now)]).toEqual([undefined, 2, 3]);
    expect(small.lookup('pk_2', d, now + 999)).toBe(2);
    expect(small.lookup('pk_2', d, now + 1000)).toBeUndefined();
  });

  it('stops serving once stopped', async () => {
    const d = hashSecret('sk_y');
    small.remember('pk_y', d, 9, small.ticket());
    expect(small.lookup('pk_y', d)).toBe(9);
    await small.stop();
    expect(small.lookup('pk_y', d)).toBeUndefined();
  });
});
