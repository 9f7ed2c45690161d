import { Writable } from 'node:stream';
import type { Knex } from 'knex';
import pino from 'pino';
import request from 'supertest';
import { createApp } from '../../src/app';
import { createDb } from '../../src/db/knex';
import { REDACT_PATHS } from '../../src/logger';
import { api, makeAccount, setupApp, testDatabaseUrl, type TestAccount } from '../helpers/app';

const { app, db, config, mailer } = setupApp();
let a: TestAccount;
beforeAll(async () => {
  a = await makeAccount(db);
});

/** Every failure is the envelope: JSON, status "failed", a string or object in errors. */
function expectEnvelope(res: request.Response, status: number, errors?: unknown) {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.status).toBe('failed');
  if (errors !== undefined) expect(res.body.errors).toEqual(errors);
  expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
}

describe('authentication', () => {
  it('names each missing header (spec AUTH shape)', async () => {
    const onlyPublic = await request(app).get('/notification-recipients').set('PublicKey', a.public_key);
    expectEnvelope(onlyPublic, 401, { SecretKey: ['The secret key field is required.'] });
    const onlySecret = await request(app).get('/notification-recipients').set('SecretKey', a.secret_key);
    expectEnvelope(onlySecret, 401, { PublicKey: ['The public key field is required.'] });
    const empty = await request(app).get('/notification-recipients').set('PublicKey', ' ').set('SecretKey', '');
    expectEnvelope(empty, 401, {
      PublicKey: ['The public key field is required.'],
      SecretKey: ['The secret key field is required.'],
    });
  });

  it('answers a wrong pair with the string of docs/decisions.md, “Conventions”', async () => {
    for (const [pk, sk] of [
      [a.public_key, 'sk_wrong'],
      ['pk_unknown', a.secret_key],
      [a.public_key, a.secret_key + 'x'],
      ['x'.repeat(5000), 'y'.repeat(5000)],
    ]) {
      const res = await request(app).get('/notification-recipients').set('PublicKey', pk).set('SecretKey', sk);
      expectEnvelope(res, 401, 'Invalid PublicKey or SecretKey');
    }
  });

  it('accepts the headers in any case', async () => {
    const res = await request(app).get('/notification-recipients').set('publickey', a.public_key).set('SECRETKEY', a.secret_key);
    expect(res.status).toBe(200);
  });
});

describe('requests of every shape get the JSON envelope', () => {
  it('unknown routes: 404 Route not found, with or without keys', async () => {
    expectEnvelope(await request(app).get('/no/such/route'), 404, 'Route not found');
    expectEnvelope(await api(app, a).get('/no/such/route'), 404, 'Route not found');
    expectEnvelope(await request(app).post('/'), 404, 'Route not found');
  });

  it('wrong methods: 405 with Allow', async () => {
    const put = await request(app).put('/notification-recipients').set(a.headers);
    expectEnvelope(put, 405, 'Method not allowed');
    expect(put.headers.allow).toBe('GET, HEAD');
    expectEnvelope(await request(app).get('/notification-recipient/save'), 405);
    expectEnvelope(await request(app).patch('/notification-recipient/delete'), 405);
    expectEnvelope(await request(app).options('/notification-recipients'), 405);
  });

  it('invalid JSON: 400', async () => {
    const res = await request(app)
      .post('/notification-recipient/save')
      .set(a.headers)
      .set('Content-Type', 'application/json')
      .send('{"email_address": "x@example.com",');
    expectEnvelope(res, 400, 'The request body is not valid JSON.');
  });

  it('malformed multipart: 400', async () => {
    const bodies = [
      '--xx\r\nContent-Disposition: form-data; name="a"\r\n\r\nb', // no closing boundary
      'garbage without any boundary',
      '--xx\r\nNo-Header-End',
    ];
    for (const body of bodies) {
      const res = await request(app)
        .post('/notification-recipient/save')
        .set(a.headers)
        .set('Content-Type', 'multipart/form-data; boundary=xx')
        .send(body);
      expectEnvelope(res, 400, 'The multipart body is malformed.');
    }
    const noBoundary = await request(app)
      .post('/notification-recipient/save')
      .set(a.headers)
      .set('Content-Type', 'multipart/form-data')
      .send('x');
    expectEnvelope(noBoundary, 400);
  });

  it('a file where none is expected: 422', async () => {
    const res = await request(app)
      .post('/notification-recipient/save')
      .set(a.headers)
      .attach('email_address', Buffer.from('x'), 'x.txt');
    expectEnvelope(res, 422, { email_address: ['The email address field does not accept a file.'] });
  });

  it('a 5 MB body: 413 for JSON, urlencoded and multipart', async () => {
    const big = 'a'.repeat(5 * 1024 * 1024);
    const json = await request(app).post('/notification-recipient/save').set(a.headers).send({ email_owner: big });
    expectEnvelope(json, 413);
    const form = await request(app).post('/notification-recipient/save').set(a.headers).type('form').send(`email_owner=${big}`);
    expectEnvelope(form, 413);
    const multipart = await request(app).post('/notification-recipient/save').set(a.headers).field('email_owner', big);
    expectEnvelope(multipart, 413);
  });

  const small = setupApp({ BODY_LIMIT_BYTES: '2048' });
  it('a chunked multipart field over the limit (no Content-Length): 413', async () => {
    const acct = await makeAccount(small.db);
    const res = await request(small.app)
      .post('/notification-recipient/save')
      .set(acct.headers)
      .field('email_address', 'ok@example.com')
      .field('email_owner', 'x'.repeat(4096));
    expectEnvelope(res, 413);
  });

  it('bodies that are not objects, or of an unknown type, are just missing fields: 422', async () => {
    for (const [type, body] of [
      ['application/json', '[1,2,3]'],
      ['application/json', '"text"'],
      ['text/plain', 'email_address=x@example.com'],
      ['application/octet-stream', '\u0000\u0001'],
    ]) {
      const res = await request(app).post('/notification-recipient/save').set(a.headers).set('Content-Type', type).send(body);
      expectEnvelope(res, 422);
      expect(res.body.errors.email_address).toEqual(['The email address field is required.']);
    }
  });

  it('a malformed URL still gets the envelope', async () => {
    expectEnvelope(await request(app).get('/notification-recipients/%E0%A4%A').set(a.headers), 404, 'Route not found');
    expectEnvelope(await request(app).get('/%').set(a.headers), 404);
  });

  it('prototype-pollution keys change nothing', async () => {
    const res = await request(app)
      .post('/notification-recipient/save')
      .set(a.headers)
      .set('Content-Type', 'application/json')
      .send('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}');
    expectEnvelope(res, 422);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('failures inside the service', () => {
  it('a thrown error answers 500 with no details', async () => {
    const broken = createApp({ config, db: {} as Knex, logger: pino({ level: 'silent' }), mailer });
    const res = await request(broken).get('/notification-recipients').set(a.headers);
    expectEnvelope(res, 500, 'Internal Server Error');
  });

  it('a database that cannot be reached answers 503 with Retry-After, and healthz says so', async () => {
    const down = createDb({ url: 'postgres://postgres@127.0.0.1:1/none' });
    try {
      const dead = createApp({ config, db: down, logger: pino({ level: 'silent' }), mailer });
      const res = await request(dead).get('/notification-recipients').set(a.headers);
      expectEnvelope(res, 503);
      expect(res.headers['retry-after']).toBe('5');
      expectEnvelope(await request(dead).get('/healthz'), 503);
    } finally {
      await down.destroy();
    }
  });

  it('a database error of class 08 from the server — Citus’s node that cannot be reached — answers 503 saying so, not 500', async () => {
    // The route's table, seen through a view whose every read fails as the Citus coordinator
    // fails a statement for a stopped worker node: SQLSTATE 08006, its wording (STABLE: evaluated
    // once per statement, even when the account has no rows).
    const schema = `node_down_${process.pid}`;
    await db.raw('CREATE SCHEMA ??', [schema]);
    const nodeDown = createDb({ url: testDatabaseUrl(), poolMax: 2, settings: { search_path: `${schema},public` } });
    try {
      await db.raw(
        `CREATE FUNCTION ??.node_down() RETURNS boolean LANGUAGE plpgsql STABLE AS $$ BEGIN
           RAISE EXCEPTION USING ERRCODE = '08006', MESSAGE = 'connection to the remote node herald@127.0.0.1:9702 failed with the following error: Connection refused';
         END $$`,
        [schema],
      );
      await db.raw('CREATE VIEW ??.notification_recipients AS SELECT * FROM public.notification_recipients WHERE ??.node_down()', [schema, schema]);
      const app = createApp({ config, db: nodeDown, logger: pino({ level: 'silent' }), mailer });
      const res = await request(app).get('/notification-recipients').set(a.headers);
      expectEnvelope(res, 503, 'Service Unavailable: the database node that holds this account’s data cannot be reached, try again shortly');
      expect(res.headers['retry-after']).toBe('5');
      // The same request on the ordinary tables answers.
      expect((await request(app).get('/contacts-type').set(a.headers)).status).toBe(200);
    } finally {
      await nodeDown.destroy();
      await db.raw('DROP SCHEMA ?? CASCADE', [schema]);
    }
  });
});

describe('public endpoints', () => {
  it('healthz answers 200 without keys when the database answers', async () => {
    const res = await request(app).get('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'success', message: 'ok' });
  });
});

describe('logging', () => {
  it('gives each request an id (echoing a sane X-Request-Id) and never logs the SecretKey', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logged = createApp({ config, db, logger: pino({ level: 'info', redact: REDACT_PATHS }, sink), mailer });
    const res = await request(logged).get('/notification-recipients').set(a.headers).set('X-Request-Id', 'req-123');
    expect(res.headers['x-request-id']).toBe('req-123');
    const other = await request(logged).get('/notification-recipients').set(a.headers).set('X-Request-Id', 'bad id with spaces');
    expect(other.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const text = lines.join('');
    expect(text).toContain('req-123');
    expect(text).toContain(a.public_key);
    expect(text).not.toContain(a.secret_key);
  });
});
