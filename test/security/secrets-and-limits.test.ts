import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Knex } from 'knex';
import request from 'supertest';
import { rotateKeys } from '../../src/accounts/accounts.service';
import { createApp } from '../../src/app';
import { createDb } from '../../src/db/knex';
import { createLogger } from '../../src/logger';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { operations } from './lib/routes';
import { accountRows } from './lib/snapshot';

/**
 * Secrets and limits (DESIGN §3 "Accounts and keys", §4): secret keys exist only as SHA-256
 * digests, never reach a log line, die at once on rotation; each key is rate limited with a
 * 429 envelope and Retry-After; request bodies are limited per route.
 */
const { app, db, config, mailer } = setupApp();

function expectFailed(res: request.Response, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.status).toBe('failed');
  expect(res.body.errors).toBeDefined();
}

describe('secret keys are stored only as SHA-256 digests', () => {
  let a: TestAccount;
  beforeAll(async () => {
    a = await makeAccount(db, 'Hashing');
  });

  it('no column of the account row holds the secret, in any encoding; the digest is SHA-256 of it', async () => {
    const { rows } = (await db.raw('SELECT * FROM accounts WHERE id = ?', [a.id])) as { rows: Array<Record<string, unknown>> };
    expect(rows).toHaveLength(1);
    const row = rows[0];
    const forms = [
      a.secret_key,
      a.secret_key.slice(3), // without the sk_ prefix
      Buffer.from(a.secret_key).toString('hex'),
      Buffer.from(a.secret_key).toString('base64'),
    ];
    for (const [column, value] of Object.entries(row)) {
      const asText = Buffer.isBuffer(value) ? [value.toString('utf8'), value.toString('hex'), value.toString('base64')] : [String(value)];
      for (const text of asText) for (const form of forms) expect({ column, contains: text.includes(form) }).toEqual({ column, contains: false });
    }
    const expected = createHash('sha256').update(a.secret_key, 'utf8').digest();
    expect(Buffer.isBuffer(row.secret_key_hash)).toBe(true);
    expect((row.secret_key_hash as Buffer).equals(expected)).toBe(true);
    expect(row.public_key).toBe(a.public_key);
  });

  it('nothing else the account owns holds it either (after requests that used it)', async () => {
    const http = api(app, a);
    await http.form('/notification-recipient/save', { email_address: 'n@example.com', email_owner: 'N' });
    await http.form('/contacts-type/add', { name: 'Some list' });
    const dump = JSON.stringify(await accountRows(db, a.id));
    expect(dump).not.toContain(a.secret_key);
    expect(dump).not.toContain(a.secret_key.slice(3));
    // And no table anywhere stores it in a text column.
    const { rows } = (await db.raw(
      `SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying', 'jsonb', 'json')`,
    )) as { rows: Array<{ table_name: string; column_name: string }> };
    const hits: string[] = [];
    for (const { table_name: t, column_name: c } of rows) {
      if (/^contact_import_\d+$/.test(t)) continue;
      const found = await db.raw(`SELECT 1 FROM ?? WHERE position(? in ??::text) > 0 LIMIT 1`, [t, a.secret_key.slice(3), c]);
      if ((found as { rows: unknown[] }).rows.length) hits.push(`${t}.${c}`);
    }
    expect(hits).toEqual([]);
  });
});

describe('the SecretKey never reaches the log', () => {
  let a: TestAccount;
  const lines: string[] = [];
  let logged: ReturnType<typeof createApp>;
  let broken: ReturnType<typeof createApp>;
  let dead: ReturnType<typeof createApp>;
  let down: Knex;

  beforeAll(async () => {
    a = await makeAccount(db, 'Logging');
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    // The service's own logger (its redaction), at the most verbose level.
    const logger = createLogger('trace', sink);
    logged = createApp({ config, db, logger, mailer });
    // A database that cannot be reached (503; knex's own warnings go to the same log) and
    // one that throws (500): the error paths log the most.
    down = createDb({ url: 'postgres://postgres@127.0.0.1:1/none', logger });
    dead = createApp({ config, db: down, logger, mailer });
    broken = createApp({ config, db: {} as Knex, logger, mailer });
  });

  afterAll(async () => {
    await down.destroy();
  });

  it('over successes and failures of every kind, with the header in any case', async () => {
    const k = a.headers;
    const statuses: number[] = [];
    const send = async (t: request.Test) => statuses.push((await t).status);
    await send(request(logged).get('/notification-recipients').set(k));
    await send(request(logged).get('/notification-recipients').set({ publickey: a.public_key, SECRETKEY: a.secret_key }));
    await send(request(logged).post('/notification-recipient/save').set(k).field('email_address', 'bad'));
    await send(request(logged).post('/notification-recipient/save').set(k).set('Content-Type', 'application/json').send('{"broken'));
    await send(request(logged).post('/notification-recipient/save').set(k).send({ email_owner: 'x'.repeat(2 * 1024 * 1024) }));
    await send(request(logged).delete('/notification-recipient/delete?id=999999999').set(k));
    await send(request(logged).get('/no/such/route').set(k));
    await send(request(logged).put('/notification-recipients').set(k));
    await send(request(logged).get('/notification-recipients').set({ PublicKey: a.public_key, SecretKey: `${a.secret_key}x` }));
    await send(request(logged).get('/notification-recipients').set({ PublicKey: 'pk_nobody', SecretKey: a.secret_key }));
    await send(request(logged).get('/notification-recipients').set('SecretKey', a.secret_key));
    await send(request(broken).get('/notification-recipients').set(k));
    await send(request(dead).get('/notification-recipients').set(k));
    expect(statuses).toEqual([200, 200, 422, 400, 413, 404, 404, 405, 401, 401, 401, 500, 503]);

    const text = lines.join('');
    expect(text).not.toContain(a.secret_key);
    expect(text).not.toContain(a.secret_key.slice(3));
    // Control: every request was logged with its headers (the public key is there), and the
    // secret's place says it was redacted.
    expect(lines.length).toBeGreaterThanOrEqual(statuses.length);
    expect(text).toContain(a.public_key);
    expect(text).toContain('"secretkey":"[redacted]"');
  });
});

describe('key rotation', () => {
  it('invalidates the old pair at once; only the new pair works', async () => {
    const a = await makeAccount(db, 'Rotation');
    const before = await request(app).get('/notification-recipients').set(a.headers);
    expect(before.status).toBe(200);

    const fresh = await rotateKeys(db, a.id);
    expect(fresh).toBeDefined();
    expect(fresh!.id).toBe(a.id);
    expect(fresh!.public_key).not.toBe(a.public_key);
    expect(fresh!.secret_key).not.toBe(a.secret_key);

    // The very next request with the old pair, and any mix of old and new halves, is refused.
    for (const [PublicKey, SecretKey] of [
      [a.public_key, a.secret_key],
      [fresh!.public_key, a.secret_key],
      [a.public_key, fresh!.secret_key],
    ]) {
      const res = await request(app).get('/notification-recipients').set({ PublicKey, SecretKey });
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { status: 'failed', errors: 'Invalid PublicKey or SecretKey' } });
    }
    const after = await request(app).get('/notification-recipients').set({ PublicKey: fresh!.public_key, SecretKey: fresh!.secret_key });
    expect(after.status).toBe(200);
    // The same account: its data is still there under the new keys.
    const row = await db('accounts').where({ id: a.id }).first('secret_key_hash');
    expect((row.secret_key_hash as Buffer).equals(createHash('sha256').update(fresh!.secret_key).digest())).toBe(true);
  });

  it('of an unknown account changes nothing', async () => {
    expect(await rotateKeys(db, 2_000_000_000)).toBeUndefined();
  });
});

describe('per-key rate limit', () => {
  const limited = setupApp({ RATE_LIMIT_PER_MINUTE: '5' });

  it('the 6th request in a minute answers 429 with the envelope and Retry-After; another key is unaffected', async () => {
    const [a, b] = await Promise.all([makeAccount(limited.db, 'Limited'), makeAccount(limited.db, 'Other')]);
    for (let i = 1; i <= 5; i += 1) {
      const res = await request(limited.app).get('/notification-recipients').set(a.headers);
      expect({ i, status: res.status }).toEqual({ i, status: 200 });
    }
    const over = await request(limited.app).get('/notification-recipients').set(a.headers);
    expectFailed(over, 429);
    expect(over.body).toEqual({ status: 'failed', errors: 'Too Many Requests' });
    const retryAfter = Number(over.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Every route and method counts against the same key pair; a wrong secret is told it is wrong.
    expectFailed(await request(limited.app).post('/contacts-type/add').set(a.headers).field('name', 'Blocked'), 429);
    expectFailed(await request(limited.app).get('/notification-recipients').set({ PublicKey: a.public_key, SecretKey: 'sk_guess' }), 401);
    const blocked = await limited.db('contact_types').where({ user_id: a.id }).count<{ n: string }[]>({ n: '*' }).first();
    expect(Number(blocked?.n)).toBe(0);

    for (let i = 1; i <= 5; i += 1) {
      const res = await request(limited.app).get('/notification-recipients').set(b.headers);
      expect({ i, status: res.status }).toEqual({ i, status: 200 });
    }
    expectFailed(await request(limited.app).get('/notification-recipients').set(b.headers), 429);
  });
});

describe('a PublicKey alone cannot lock its account out', () => {
  const limited = setupApp({ RATE_LIMIT_PER_MINUTE: '20' });

  it('21 requests with A’s PublicKey and a wrong SecretKey answer 401 each and leave A’s real pair served', async () => {
    const a = await makeAccount(limited.db, 'Lockout');
    for (let i = 1; i <= 21; i += 1) {
      const res = await request(limited.app).get('/notification-recipients').set({ PublicKey: a.public_key, SecretKey: `sk_wrong_${i}` });
      expect({ i, status: res.status }).toEqual({ i, status: 401 });
    }
    for (let i = 1; i <= 20; i += 1) {
      const res = await request(limited.app).get('/notification-recipients').set(a.headers);
      expect({ i, status: res.status }).toEqual({ i, status: 200 });
    }
    expectFailed(await request(limited.app).get('/notification-recipients').set(a.headers), 429);
  });
});

describe('body size limits per route', () => {
  const TWO_MB = 2 * 1024 * 1024;
  const filler = 'a'.repeat(TWO_MB);
  const posts = operations().filter((op) => op.method === 'post');
  let a: TestAccount;

  beforeAll(async () => {
    a = await makeAccount(db, 'Limits');
  });

  it('the route table has design routes (5 MB) and ordinary ones (1 MB)', () => {
    expect(config.bodyLimitBytes).toBe(1024 * 1024);
    expect(config.designBodyLimitBytes).toBe(5 * 1024 * 1024);
    expect(posts.filter((op) => op.def.bodyLimit === 'design').map((op) => op.key)).toEqual(
      expect.arrayContaining(['POST /single/send/create', 'POST /single/send/update', 'POST /automations/schedule/create']),
    );
  });

  it.each(posts.map((op) => ({ op, label: `${op.key} (${op.def.bodyLimit === 'design' ? '5 MB' : '1 MB'})` })))(
    'a 2 MB JSON body to $label',
    async ({ op }) => {
      const res = await request(app).post(op.path).set(a.headers).send({ template_html: filler, filler });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      if (op.def.bodyLimit === 'design') {
        // Read and validated: whatever it answers, it is not "too large".
        expect(res.status).not.toBe(413);
        expect(res.status).toBeLessThan(500);
      } else {
        expectFailed(res, 413);
      }
    },
  );

  it('a 2 MB template_html on /single/send/create is accepted whole; 6 MB is 413', async () => {
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a);
    const list = await makeContactType(db, a);
    const html = `<html><body>${'<p>long design</p>'.repeat(Math.ceil(TWO_MB / 18))}</body></html>`;
    const fields = {
      template_id: 1,
      sender_id: sender,
      unsubscribe_group_id: group,
      single_send_name: 'Big design',
      subject: 'Big',
      preheader: 'Big',
      recipient_id: [`contacts_${list}`],
      schedule_type: 1,
      schedule_date: '2099-01-01',
      schedule_time: '10:00',
    };
    const res = await request(app).post('/single/send/create').set(a.headers).send({ ...fields, template_html: html });
    expect({ status: res.status, status_: res.body.status }).toEqual({ status: 200, status_: 'success' });
    const stored = await db('single_sends').where({ utr: res.body.message.utr }).first('template_html');
    expect(stored.template_html).toBe(html);

    const tooBig = await request(app).post('/single/send/create').set(a.headers).send({ ...fields, template_html: 'x'.repeat(6 * 1024 * 1024) });
    expectFailed(tooBig, 413);
    // As multipart too: the design field may be large, an ordinary field may not.
    const multipart = await api(app, a).form('/single/send/create', { ...fields, template_html: html });
    expect(multipart.status).toBe(200);
    const bigName = await api(app, a).form('/contacts-type/add', { name: filler });
    expectFailed(bigName, 413);
  });
});
