import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { AddressObject, ParsedMail } from 'mailparser';
import request from 'supertest';
import { createApp } from '../../src/app';
import { isCitus } from '../../src/db/citus';
import { createLogger } from '../../src/logger';
import { MailError, outboxMailer } from '../../src/mail/mailer';
import { senderRecord, type SenderRecord } from '../../src/resources/senders/senders.schemas';
import { formatSenderAddress, senderAddress } from '../../src/mail/sender-address';
import { findVerifiedSender, senderIdMessages } from '../../src/resources/senders/senders.service';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { waitFor } from '../helpers/wait';
import { expectAuthMissing, expectNF1, expectSuccess, expectSuccessInErrors, expectVal } from '../helpers/expect';

const { app, db, config, mailer } = setupApp();
let a: TestAccount;
let b: TestAccount;

/** Reference places from the seeded geography (looked up, never hard-coded ids). */
const geo = { us: 0, california: 0, sanFrancisco: 0, newYork: 0, newYorkCity: 0, canada: 0, ontario: 0 };

const LINK = /http:\/\/herald\.test\/senders\/verify\/([0-9]+\.[A-Za-z0-9_-]+)/;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  const country = (iso: string) => db('countries').where({ iso_code: iso }).first('id');
  const state = (countryId: number, iso: string) => db('states').where({ country_id: countryId, iso_code: iso }).first('id');
  const city = (stateId: number, name: string) => db('cities').where({ state_id: stateId, name }).first('id');
  geo.us = (await country('US')).id;
  geo.canada = (await country('CA')).id;
  geo.california = (await state(geo.us, 'CA')).id;
  geo.newYork = (await state(geo.us, 'NY')).id;
  geo.ontario = (await state(geo.canada, 'ON')).id;
  geo.sanFrancisco = (await city(geo.california, 'San Francisco')).id;
  geo.newYorkCity = (await city(geo.newYork, 'New York City')).id;
});

beforeEach(() => mailer.clear());

let seq = 0;
function fields(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  seq += 1;
  return {
    from_name: 'Acme News',
    from_email: `news${seq}@acme.example`,
    reply_to_email: 'support@acme.example',
    country_id: geo.us,
    state_id: geo.california,
    city_id: geo.sanFrancisco,
    zip_code: '94105',
    company_address: '1 Market St',
    company_address2: 'Suite 200',
    nickname: `Newsletter ${seq}`,
    ...overrides,
  };
}

async function listOf(account: TestAccount): Promise<SenderRecord[]> {
  const res = await api(app, account).get('/senders');
  expectSuccess(res);
  return res.body.message.senders;
}

async function details(account: TestAccount, id: number): Promise<SenderRecord> {
  const res = await api(app, account).get(`/sender/details?sender_id=${id}`);
  expectSuccess(res);
  return res.body.message.sender;
}

/** Saves a sender through the API and returns its record (the newest of the account). */
async function save(account: TestAccount, overrides: Record<string, unknown> = {}): Promise<SenderRecord> {
  const body = fields(overrides);
  expectSuccess(await api(app, account).form('/sender/save', body), 'Added Successfully');
  const [newest] = await listOf(account);
  expect(newest.from_email).toBe(body.from_email);
  return newest;
}

function toAddress(m: ParsedMail): string | undefined {
  return (m.to as AddressObject | undefined)?.value[0]?.address;
}

async function mailsTo(address: string): Promise<ParsedMail[]> {
  return (await mailer.parsed()).filter((m) => toAddress(m)?.toLowerCase() === address.toLowerCase());
}

/** The token of the (only) verification mail to this address. */
async function tokenMailedTo(address: string): Promise<string> {
  const mails = await mailsTo(address);
  expect(mails).toHaveLength(1);
  const match = LINK.exec(mails[0].text ?? '');
  expect(match).not.toBeNull();
  return match![1];
}

function openLink(token: string) {
  return request(app).get(`/senders/verify/${token}`);
}

async function storedHash(id: number): Promise<Buffer | null> {
  return (await db('senders').where({ id }).first('verify_token_hash')).verify_token_hash;
}

function failingMailer(): () => void {
  const original = mailer.send;
  mailer.send = async () => {
    throw new MailError('connect ECONNREFUSED 127.0.0.1:25', false);
  };
  return () => {
    mailer.send = original;
  };
}

async function insertSingleSend(account: TestAccount, senderId: number, status: number, deleted = false): Promise<number> {
  const [group] = await db('unsubscribe_groups')
    .insert({ user_id: account.id, rand_id: String(Date.now()) + String(seq++), group_name: 'G', description: 'D' })
    .returning(['id']);
  const [send] = await db('single_sends')
    .insert({
      user_id: account.id,
      utr: randomUUID(),
      template_id: 1,
      sender_id: senderId,
      unsubscribe_group_id: group.id,
      single_send_name: 'Launch',
      subject: 'Hello',
      preheader: 'Hi',
      from_sender: 'news@acme.example',
      reply_to: 'support@acme.example',
      status,
      deleted_at: deleted ? db.fn.now() : null,
    })
    .returning(['id']);
  return send.id;
}

describe('GET or POST /senders (rule 9)', () => {
  it('lists the live senders newest first, each exactly the spec’s record', async () => {
    const first = await save(a, { nickname: 'First' });
    const second = await save(a, { nickname: 'Second' });
    const list = await listOf(a);
    expect(list.slice(0, 2).map((s) => s.id)).toEqual([second.id, first.id]);
    for (const s of list) expectShape(senderRecord, s);
  });

  it('answers POST the same as GET', async () => {
    const viaPost = await api(app, a).form('/senders', {});
    expectSuccess(viaPost);
    expect(viaPost.body.message.senders).toEqual(await listOf(a));
  });

  it('pages with ?page=&per_page= on either method', async () => {
    const all = await listOf(a);
    const res = await api(app, a).get('/senders?page=2&per_page=1');
    expectSuccess(res);
    expect(res.body.message).toEqual({ senders: [all[1]], pagination: { page: 2, per_page: 1, total: all.length } });
    const viaPost = await api(app, a).form('/senders?page=2&per_page=1', {});
    expect(viaPost.body.message).toEqual(res.body.message);
  });

  it('never shows another account’s senders', async () => {
    const mine = await listOf(b);
    expect(mine.every((s) => s.user_id === b.id)).toBe(true);
    expect(mine.some((s) => s.user_id === a.id)).toBe(false);
  });

  it('answers AUTH without keys, on both methods', async () => {
    expectAuthMissing(await api(app).get('/senders'));
    expectAuthMissing(await api(app).form('/senders', {}));
  });
});

describe('POST /sender/save', () => {
  it('saves an unverified sender with every field, a 16-hex utr and send_at', async () => {
    const body = fields();
    const s = await save(a, body);
    expectShape(senderRecord, s);
    expect(s).toMatchObject({
      user_id: a.id,
      from_name: 'Acme News',
      from_email: body.from_email,
      reply_to_email: 'support@acme.example',
      country_id: geo.us,
      state_id: geo.california,
      city_id: geo.sanFrancisco,
      zip_code: '94105',
      company_address: '1 Market St',
      company_address2: 'Suite 200',
      nickname: body.nickname,
      is_verified: 0,
      deleted_at: null,
    });
    expect(s.utr).toMatch(/^[0-9a-f]{16}$/);
    expect(s.send_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(s.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(Object.keys(s)).not.toContain('verify_token_hash');
  });

  it('stores absent optional fields as null ids and empty strings', async () => {
    const s = await save(a, { state_id: undefined, city_id: undefined, zip_code: undefined, company_address2: undefined });
    expect(s).toMatchObject({ state_id: null, city_id: null, zip_code: '', company_address2: '' });
    expectShape(senderRecord, s);
  });

  it('mails a verification link to from_email; only the token’s SHA-256 is stored', async () => {
    const s = await save(a, { from_name: 'Mail Check' });
    const [mail] = await mailsTo(s.from_email);
    expect(mail.from?.value[0].address).toBe(config.mailFrom);
    expect(toAddress(mail)).toBe(s.from_email);
    expect((mail.to as AddressObject).value[0].name).toBe('Mail Check');
    expect(mail.subject).toBe(`Verify your sender address ${s.from_email}`);
    const token = LINK.exec(String(mail.html))![1];
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(mail.html).toContain(`href="http://herald.test/senders/verify/${token}"`);
    expect(await tokenMailedTo(s.from_email)).toBe(token);
    expect(await storedHash(s.id)).toEqual(createHash('sha256').update(token).digest());
  });

  it('reports every missing required field at once with the spec’s words', async () => {
    const res = await api(app, a).form('/sender/save', {});
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      status: 'failed',
      errors: {
        from_name: ['The from name field is required.'],
        from_email: ['The from email field is required.'],
        reply_to_email: ['The reply to email field is required.'],
        country_id: ['The country id field is required.'],
        company_address: ['The company address field is required.'],
        nickname: ['The nickname field is required.'],
      },
    });
  });

  it('counts whitespace-only values as missing', async () => {
    const res = await api(app, a).form('/sender/save', fields({ from_name: '   ', nickname: ' ' }));
    expectVal(res, { from_name: ['The from name field is required.'], nickname: ['The nickname field is required.'] });
  });

  it('refuses bad addresses, lengths and integers', async () => {
    const long = (n: number) => 'x'.repeat(n);
    const res = await api(app, a).form(
      '/sender/save',
      fields({
        from_name: long(256),
        from_email: 'not-an-email',
        reply_to_email: 'a@b',
        country_id: 'abc',
        state_id: '1.5',
        zip_code: long(41),
        company_address: long(256),
        company_address2: long(256),
        nickname: long(256),
      }),
    );
    expectVal(res, {
      from_name: ['The from name must not be greater than 255 characters.'],
      from_email: ['The from email must be a valid email address.'],
      reply_to_email: ['The reply to email must be a valid email address.'],
      country_id: ['The country id must be an integer.'],
      state_id: ['The state id must be an integer.'],
      zip_code: ['The zip code must not be greater than 40 characters.'],
      company_address: ['The company address must not be greater than 255 characters.'],
      company_address2: ['The company address2 must not be greater than 255 characters.'],
      nickname: ['The nickname must not be greater than 255 characters.'],
    });
  });

  it('accepts 255-character addresses and a 40-character zip code', async () => {
    const s = await save(a, { company_address: 'a'.repeat(255), company_address2: 'b'.repeat(255), zip_code: 'z'.repeat(40) });
    expect(s.company_address).toHaveLength(255);
    expect(s.company_address2).toHaveLength(255);
    expect(s.zip_code).toHaveLength(40);
  });

  it('refuses an unknown country', async () => {
    const res = await api(app, a).form('/sender/save', fields({ country_id: 999999, state_id: undefined, city_id: undefined }));
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({ country_id: ['The selected country id is invalid.'] });
  });

  it('refuses a state of another country and a city of another state', async () => {
    expectVal(await api(app, a).form('/sender/save', fields({ state_id: geo.ontario, city_id: undefined })), {
      state_id: ['The selected state id is invalid.'],
    });
    expectVal(await api(app, a).form('/sender/save', fields({ city_id: geo.newYorkCity })), {
      city_id: ['The selected city id is invalid.'],
    });
    expectVal(await api(app, a).form('/sender/save', fields({ country_id: geo.canada, state_id: undefined })), {
      city_id: ['The selected city id is invalid.'],
    });
  });

  it('reports the geography failures together', async () => {
    const res = await api(app, a).form('/sender/save', fields({ country_id: 999999, state_id: 999999, city_id: 99999999 }));
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({
      country_id: ['The selected country id is invalid.'],
      state_id: ['The selected state id is invalid.'],
      city_id: ['The selected city id is invalid.'],
    });
  });

  it('accepts a city of the country without a state', async () => {
    const s = await save(a, { state_id: undefined, city_id: geo.newYorkCity });
    expect(s).toMatchObject({ state_id: null, city_id: geo.newYorkCity });
  });

  it('saves nothing and mails nothing when it refuses', async () => {
    const before = await listOf(a);
    await api(app, a).form('/sender/save', fields({ country_id: 999999 }));
    await api(app, a).form('/sender/save', fields({ from_email: 'bad' }));
    expect(await listOf(a)).toEqual(before);
    expect(mailer.sent).toHaveLength(0);
  });

  it('still saves the sender when the mail cannot be sent (send_at null)', async () => {
    const restore = failingMailer();
    try {
      const s = await save(a, { nickname: 'No mail' });
      expect(s).toMatchObject({ is_verified: 0, send_at: null, nickname: 'No mail' });
    } finally {
      restore();
    }
  });

  it('accepts urlencoded and JSON bodies too', async () => {
    const json = fields();
    expectSuccess(await api(app, b).json('/sender/save', json), 'Added Successfully');
    const url = fields();
    const encoded = new URLSearchParams(Object.entries(url).map(([k, v]): [string, string] => [k, String(v)])).toString();
    expectSuccess(await api(app, b).urlencoded('/sender/save', encoded), 'Added Successfully');
    const emails = (await listOf(b)).map((s) => s.from_email);
    expect(emails).toEqual(expect.arrayContaining([json.from_email, url.from_email]));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/sender/save', fields()));
  });
});

describe('GET /sender/details', () => {
  it('returns the sender as `message.sender`', async () => {
    const s = await save(a);
    const res = await api(app, a).get(`/sender/details?sender_id=${s.id}`);
    expectSuccess(res, { sender: s });
    expectShape(senderRecord, res.body.message.sender);
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?sender_id=999999999', '?sender_id=abc', '?sender_id=0', '?sender_id=-3', '?sender_id=99999999999', '']) {
      expectNF1(await api(app, a).get(`/sender/details${q}`));
    }
  });

  it('answers NF1 for another account’s sender', async () => {
    const s = await save(a);
    expectNF1(await api(app, b).get(`/sender/details?sender_id=${s.id}`));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/sender/details?sender_id=1'));
  });
});

describe('POST /sender/update', () => {
  it('replaces the fields and answers `Updated Successfully`', async () => {
    const s = await save(a);
    mailer.clear();
    const res = await api(app, a).form('/sender/update', {
      sender_id: s.id,
      ...fields({
        from_email: s.from_email.toUpperCase(),
        from_name: 'Renamed',
        reply_to_email: 'help@acme.example',
        country_id: geo.us,
        state_id: geo.newYork,
        city_id: undefined,
        zip_code: undefined,
        company_address: '2 Broadway',
        company_address2: undefined,
        nickname: 'Renamed sender',
      }),
    });
    expectSuccess(res, 'Updated Successfully');
    const after = await details(a, s.id);
    expectShape(senderRecord, after);
    expect(after).toEqual({
      ...s,
      from_email: s.from_email.toUpperCase(),
      from_name: 'Renamed',
      reply_to_email: 'help@acme.example',
      state_id: geo.newYork,
      city_id: null,
      zip_code: '',
      company_address: '2 Broadway',
      company_address2: '',
      nickname: 'Renamed sender',
      updated_at: expect.any(String),
    });
    expect(after.updated_at > s.updated_at).toBe(true);
    // Only the case changed: the same address, still its old verification state, no new mail.
    expect(mailer.sent).toHaveLength(0);
  });

  it('keeps a verified sender verified when from_email is unchanged', async () => {
    const s = await save(a);
    expect((await openLink(await tokenMailedTo(s.from_email))).status).toBe(200);
    mailer.clear();
    expectSuccess(await api(app, a).form('/sender/update', { sender_id: s.id, ...fields({ from_email: s.from_email, from_name: 'Same' }) }));
    expect(await details(a, s.id)).toMatchObject({ is_verified: 1, from_name: 'Same' });
    expect(mailer.sent).toHaveLength(0);
  });

  it('a new from_email makes the sender unverified and mails the new address', async () => {
    const s = await save(a);
    expect((await openLink(await tokenMailedTo(s.from_email))).status).toBe(200);
    expect((await details(a, s.id)).is_verified).toBe(1);
    mailer.clear();
    const changed = fields({ from_email: `moved${seq}@acme.example` });
    expectSuccess(await api(app, a).form('/sender/update', { sender_id: s.id, ...changed }), 'Updated Successfully');
    const after = await details(a, s.id);
    expect(after).toMatchObject({ is_verified: 0, from_email: changed.from_email });
    expect(after.send_at).not.toBeNull();
    const token = await tokenMailedTo(String(changed.from_email));
    expect(await mailsTo(s.from_email)).toHaveLength(0);
    expect((await openLink(token)).status).toBe(200);
    expect((await details(a, s.id)).is_verified).toBe(1);
  });

  it('a new from_email invalidates the link mailed to the old address', async () => {
    const s = await save(a);
    const oldToken = await tokenMailedTo(s.from_email);
    expectSuccess(await api(app, a).form('/sender/update', { sender_id: s.id, ...fields() }));
    expect((await openLink(oldToken)).status).toBe(404);
    expect((await details(a, s.id)).is_verified).toBe(0);
  });

  it('refuses like save, and changes nothing', async () => {
    const s = await save(a);
    expectVal(await api(app, a).form('/sender/update', { sender_id: s.id }), {
      from_name: ['The from name field is required.'],
      from_email: ['The from email field is required.'],
      reply_to_email: ['The reply to email field is required.'],
      country_id: ['The country id field is required.'],
      company_address: ['The company address field is required.'],
      nickname: ['The nickname field is required.'],
    });
    expectVal(await api(app, a).form('/sender/update', { sender_id: s.id, ...fields({ company_address: 'x'.repeat(256) }) }), {
      company_address: ['The company address must not be greater than 255 characters.'],
    });
    expectVal(await api(app, a).form('/sender/update', { sender_id: s.id, ...fields({ from_email: 'nope' }) }), {
      from_email: ['The from email must be a valid email address.'],
    });
    expectVal(await api(app, a).form('/sender/update', { sender_id: s.id, ...fields({ state_id: geo.ontario }) }), {
      state_id: ['The selected state id is invalid.'],
    });
    expect(await details(a, s.id)).toEqual(s);
  });

  it('requires sender_id', async () => {
    expectVal(await api(app, a).form('/sender/update', fields()), { sender_id: ['The sender id field is required.'] });
  });

  it('answers NF1 for unknown and malformed ids', async () => {
    for (const id of ['999999999', 'abc', '0', '99999999999']) {
      expectNF1(await api(app, a).form('/sender/update', { sender_id: id, ...fields() }));
    }
  });

  it('answers NF1 for another account’s sender and leaves it unchanged', async () => {
    const s = await save(a);
    mailer.clear();
    expectNF1(await api(app, b).form('/sender/update', { sender_id: s.id, ...fields({ from_name: 'Hijacked' }) }));
    expect(await details(a, s.id)).toEqual(s);
    expect(mailer.sent).toHaveLength(0);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).form('/sender/update', { sender_id: 1, ...fields() }));
  });
});

describe('DELETE /sender/delete', () => {
  // Single sends pin their template (FK), and another file deletes templates in a rolled-back transaction.
  afterAll(() => db('single_sends').whereIn('user_id', [a.id, b.id]).delete());

  it('soft-deletes, with the confirmation in `errors` (rule 3)', async () => {
    const s = await save(a);
    expectSuccessInErrors(await api(app, a).delete(`/sender/delete?sender_id=${s.id}`), 'Deleted Successfully');
    expect((await listOf(a)).some((x) => x.id === s.id)).toBe(false);
    expectNF1(await api(app, a).get(`/sender/details?sender_id=${s.id}`));
    expectNF1(await api(app, a).delete(`/sender/delete?sender_id=${s.id}`));
    const row = await db('senders').where({ id: s.id }).first();
    expect(row.deleted_at).not.toBeNull();
  });

  it('answers NF1 for unknown, malformed and missing ids', async () => {
    for (const q of ['?sender_id=999999999', '?sender_id=abc', '?sender_id=-1', '']) {
      expectNF1(await api(app, a).delete(`/sender/delete${q}`));
    }
  });

  it('answers NF1 for another account’s sender and leaves it alone', async () => {
    const s = await save(a);
    expectNF1(await api(app, b).delete(`/sender/delete?sender_id=${s.id}`));
    expect(await details(a, s.id)).toEqual(s);
  });

  it('is refused while a ready or running single send uses the sender', async () => {
    const s = await save(a);
    for (const status of [1, 2]) {
      const sendId = await insertSingleSend(a, s.id, status);
      const res = await api(app, a).delete(`/sender/delete?sender_id=${s.id}`);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 422,
        body: { status: 'failed', errors: 'The sender is used by a single send that is ready or running.' },
      });
      expect(await details(a, s.id)).toEqual(s);
      await db('single_sends').where({ id: sendId }).update({ status: 3 });
    }
  });

  it('is refused while an email of an automation that is not deleted uses the sender', async () => {
    const s = await save(a);
    const [automation] = await db('automations')
      .insert({ user_id: a.id, utr: randomUUID(), automation_name: 'Welcome', automation_type: 1, status: 2 })
      .returning(['id']);
    await db('automation_schedules').insert({
      user_id: a.id,
      automation_id: automation.id,
      sender_id: s.id,
      subject: 'Hi',
      waiting_period: 0,
      waiting_type: 'instantly',
      utr: randomUUID(),
      template_id: 1,
      preview_img: 'x.png',
    });
    const res = await api(app, a).delete(`/sender/delete?sender_id=${s.id}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: { status: 'failed', errors: 'The sender is used by an automation email.' } });
    await db('automations').where({ id: automation.id }).update({ deleted_at: db.fn.now() });
    expectSuccessInErrors(await api(app, a).delete(`/sender/delete?sender_id=${s.id}`), 'Deleted Successfully');
  });

  it('a single send created while the sender is being deleted waits, then is refused; nothing half-made', async () => {
    const s = await save(a);
    await db('senders').where({ id: s.id }).update({ is_verified: 1 });
    const [group] = await db('unsubscribe_groups')
      .insert({ user_id: a.id, rand_id: String(Date.now()) + String(seq++), group_name: 'G', description: 'D' })
      .returning(['id']);
    const [list] = await db('contact_types').insert({ user_id: a.id, name: `Race ${seq++}` }).returning(['id']);
    const name = `Race ${randomUUID()}`;
    // A delete in progress: it holds the sender and has found no send using it.
    const trx = await db.transaction();
    await trx('senders').where({ id: s.id, user_id: a.id }).forUpdate().first('id');
    const creating = api(app, a)
      .form('/single/send/create', {
        template_id: 1,
        sender_id: s.id,
        unsubscribe_group_id: group.id,
        single_send_name: name,
        subject: 'Hello',
        preheader: 'Hi',
        recipient_id: [`contacts_${list.id}`],
        schedule_type: 0,
      })
      .then((r) => r);
    // The create must be waiting on the sender's lock, not done already.
    // On Citus the create waits on the node holding the sender's shard: citus_stat_activity shows every node's sessions.
    const activity = (await isCitus(db)) ? 'citus_stat_activity' : 'pg_stat_activity';
    await waitFor('the create to wait for the sender lock', async () => {
      const waiting = await db.raw(`SELECT count(*)::int AS n FROM ${activity} WHERE wait_event_type = 'Lock' AND datname = current_database()`);
      return waiting.rows[0].n > 0;
    }, { timeoutMs: 20_000 });
    await trx('senders').where({ id: s.id, user_id: a.id }).update({ deleted_at: trx.fn.now() });
    await trx.commit();
    const res = await creating;
    expectVal(res, { sender_id: ['The selected sender id is invalid.'] });
    expect(await db('single_sends').where({ user_id: a.id, single_send_name: name }).first()).toBeUndefined();
  });

  it('is allowed when the sends using it are completed, drafts or deleted', async () => {
    const s = await save(a);
    await insertSingleSend(a, s.id, 3);
    await insertSingleSend(a, s.id, 0);
    await insertSingleSend(a, s.id, 1, true);
    expectSuccessInErrors(await api(app, a).delete(`/sender/delete?sender_id=${s.id}`), 'Deleted Successfully');
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).delete('/sender/delete?sender_id=1'));
  });
});

describe('GET /sender/resend-mail', () => {
  it('mails a fresh link; the previous one stops working', async () => {
    const s = await save(a);
    const oldToken = await tokenMailedTo(s.from_email);
    await db('senders').where({ id: s.id }).update({ send_at: '2020-01-01T00:00:00Z' });
    mailer.clear();
    expectSuccess(await api(app, a).get(`/sender/resend-mail?sender_id=${s.id}`), 'Verification Mail Send');
    const newToken = await tokenMailedTo(s.from_email);
    expect(newToken).not.toBe(oldToken);
    expect((await details(a, s.id)).send_at).not.toBe('2020-01-01 00:00:00');
    expect((await openLink(oldToken)).status).toBe(404);
    expect((await details(a, s.id)).is_verified).toBe(0);
    expect((await openLink(newToken)).status).toBe(200);
    expect((await details(a, s.id)).is_verified).toBe(1);
  });

  it('mails a verified sender too; opening that link keeps it verified', async () => {
    const s = await save(a);
    await openLink(await tokenMailedTo(s.from_email));
    mailer.clear();
    expectSuccess(await api(app, a).get(`/sender/resend-mail?sender_id=${s.id}`), 'Verification Mail Send');
    expect((await openLink(await tokenMailedTo(s.from_email))).status).toBe(200);
    expect((await details(a, s.id)).is_verified).toBe(1);
  });

  it('answers 503 when the mail cannot be sent, and the previous link keeps working', async () => {
    const s = await save(a);
    const token = await tokenMailedTo(s.from_email);
    const restore = failingMailer();
    try {
      const res = await api(app, a).get(`/sender/resend-mail?sender_id=${s.id}`);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 503,
        body: { status: 'failed', errors: 'The verification mail could not be sent. Try again later.' },
      });
    } finally {
      restore();
    }
    expect(await details(a, s.id)).toEqual(s);
    expect((await openLink(token)).status).toBe(200);
  });

  it('answers NF1 for unknown, malformed, deleted and another account’s senders, mailing nothing', async () => {
    const s = await save(a);
    const gone = await save(a);
    await api(app, a).delete(`/sender/delete?sender_id=${gone.id}`);
    mailer.clear();
    for (const q of ['?sender_id=999999999', '?sender_id=abc', '', `?sender_id=${gone.id}`]) {
      expectNF1(await api(app, a).get(`/sender/resend-mail${q}`));
    }
    expectNF1(await api(app, b).get(`/sender/resend-mail?sender_id=${s.id}`));
    expect(mailer.sent).toHaveLength(0);
    expect(await details(a, s.id)).toEqual(s);
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/sender/resend-mail?sender_id=1'));
  });
});

describe('GET /senders/verify/<token> (public page)', () => {
  it('verifies the sender and shows a page naming it; the link works once', async () => {
    const s = await save(a, { from_name: 'Page Check' });
    const token = await tokenMailedTo(s.from_email);
    const res = await openLink(token);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.text).toContain('Sender verified');
    expect(res.text).toContain('Page Check');
    expect(res.text).toContain(s.from_email);
    expect(await details(a, s.id)).toMatchObject({ is_verified: 1 });
    expect(await storedHash(s.id)).toBeNull();

    const again = await openLink(token);
    expect(again.status).toBe(404);
    expect(again.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(again.text).toContain('This verification link is invalid or has expired.');
  });

  it('answers 404 for unknown and malformed tokens', async () => {
    for (const token of ['x'.repeat(43), `1.${'x'.repeat(43)}`, `${2 ** 31}.${'x'.repeat(43)}`, 'short', 'a'.repeat(201), 'bad%20token%20with%20spaces%20in%20it%20xxxxxxxxxx']) {
      const res = await openLink(token);
      expect(res.status).toBe(404);
      expect(res.text).toContain('This verification link is invalid or has expired.');
    }
  });

  it('opens a link mailed before links named their account (the token alone), once', async () => {
    const s = await save(a);
    const legacy = randomBytes(32).toString('base64url');
    await db('senders').where({ id: s.id, user_id: a.id }).update({ verify_token_hash: createHash('sha256').update(legacy).digest() });
    expect((await request(app).head(`/senders/verify/${legacy}`)).status).toBe(200);
    expect((await openLink(legacy)).status).toBe(200);
    expect(await details(a, s.id)).toMatchObject({ is_verified: 1 });
    expect((await openLink(legacy)).status).toBe(404);
  });

  it('a HEAD request (link checker) does not use the link up', async () => {
    const s = await save(a);
    const token = await tokenMailedTo(s.from_email);
    expect((await request(app).head(`/senders/verify/${token}`)).status).toBe(200);
    expect((await details(a, s.id)).is_verified).toBe(0);
    expect((await openLink(token)).status).toBe(200);
    expect((await request(app).head(`/senders/verify/${token}`)).status).toBe(404);
  });

  it('a deleted sender’s link is invalid', async () => {
    const s = await save(a);
    const token = await tokenMailedTo(s.from_email);
    await api(app, a).delete(`/sender/delete?sender_id=${s.id}`);
    expect((await openLink(token)).status).toBe(404);
    expect((await db('senders').where({ id: s.id }).first()).is_verified).toBe(0);
  });

  it('escapes what the account typed, on the page and in the mail', async () => {
    const name = '<script>alert("x")</script><img src=x onerror=alert(1)>';
    const s = await save(a, { from_name: name, nickname: '<b>nick</b>' });
    const [mail] = await mailsTo(s.from_email);
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).not.toContain('<b>nick</b>');
    const res = await openLink(await tokenMailedTo(s.from_email));
    expect(res.status).toBe(200);
    expect(res.text).not.toContain('<script>');
    expect(res.text).not.toContain('<img');
    expect(res.text).toContain('&lt;script>alert(&quot;x&quot;)&lt;/script>');
  });

  it('queues one notice for the account’s notification recipients when the sender becomes verified (the page does not wait for SMTP)', async () => {
    const c = await makeAccount(db);
    expectSuccess(
      await api(app, c).form('/notification-recipient/save', { email_address: 'ops@acme.example', email_owner: 'Ops' }),
    );
    const s = await save(c, { nickname: 'Notify me' });
    const token = await tokenMailedTo(s.from_email);
    mailer.clear();
    expect((await openLink(token)).status).toBe(200);
    // The notice is the worker's job (test/delivery/events.test.ts mails one): none went out in the request.
    expect(await mailsTo('ops@acme.example')).toHaveLength(0);
    const queued = async () =>
      db('events as e')
        .join('outbox_jobs as j', (j) => j.on('j.user_id', 'e.user_id').andOn('j.event_id', 'e.id'))
        .where({ 'e.user_id': c.id, 'e.type': 'sender.verified' })
        .select('e.data', 'j.payload', 'j.status');
    expect(await queued()).toEqual([
      {
        data: { subject: `Sender verified: ${s.from_email}`, sender_id: s.id, nickname: 'Notify me', from_name: expect.any(String), from_email: s.from_email },
        payload: { to: [{ name: 'Ops', email: 'ops@acme.example' }] },
        status: 'queued',
      },
    ]);

    // Verifying an already verified sender again (a resent link) is no new event.
    mailer.clear();
    await api(app, c).get(`/sender/resend-mail?sender_id=${s.id}`);
    expect((await openLink(await tokenMailedTo(s.from_email))).status).toBe(200);
    expect(await queued()).toHaveLength(1);
  });
});

describe('findVerifiedSender and senderAddress (for single sends and automations)', () => {
  it('tells a usable sender from a missing or unverified one', async () => {
    const ctxA = { userId: a.id, db };
    const s = await save(a);
    expect(await findVerifiedSender(ctxA, s.id)).toBe('unverified');
    await openLink(await tokenMailedTo(s.from_email));
    expect(await findVerifiedSender(ctxA, s.id)).toEqual({ ...s, is_verified: 1, updated_at: expect.any(String) });
    expect(await findVerifiedSender({ userId: b.id, db }, s.id)).toBe('missing');
    expect(await findVerifiedSender(ctxA, 999999999)).toBe('missing');
    await api(app, a).delete(`/sender/delete?sender_id=${s.id}`);
    expect(await findVerifiedSender(ctxA, s.id)).toBe('missing');
    expect(senderIdMessages).toEqual({
      missing: 'The selected sender id is invalid.',
      unverified: 'The selected sender id is not verified.',
    });
  });

  it('writes the postal address on one line with the places’ names', async () => {
    const s = await save(a);
    expect(await senderAddress(db, s)).toBe('1 Market St, Suite 200, San Francisco, California 94105, United States');
    const bare = await save(a, { state_id: undefined, city_id: undefined, zip_code: undefined, company_address2: undefined });
    expect(await senderAddress(db, bare)).toBe('1 Market St, United States');
    expect(formatSenderAddress({ company_address: '9 Rue X', zip_code: '75001', city: 'Paris', country: 'France' })).toBe(
      '9 Rue X, Paris, 75001, France',
    );
  });
});

describe('without SMTP_URL (mail written to DATA_DIR/outbox)', () => {
  it('logs the verification link, so a developer can open it without decoding the .eml', async () => {
    const lines: string[] = [];
    const log = createLogger('info', new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) }));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-outbox-'));
    try {
      const local = createApp({ config, db, logger: log, mailer: outboxMailer(dir) });
      const body = fields();
      expectSuccess(await api(local, a).form('/sender/save', body), 'Added Successfully');
      const line = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'mail written to the outbox (no SMTP_URL)');
      expect(line).toMatchObject({ to: body.from_email, subject: `Verify your sender address ${body.from_email}`, outbox: dir });
      expect(fs.readdirSync(dir)).toHaveLength(1);
      // The logged link is the mailed one: opening it verifies the sender.
      const token = LINK.exec(line.link)![1];
      expect((await openLink(token)).status).toBe(200);
      expect((await listOf(a)).find((x) => x.from_email === body.from_email)!.is_verified).toBe(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('logs nothing of the kind when mail goes to an SMTP server (or anywhere else)', async () => {
    const lines: string[] = [];
    const log = createLogger('info', new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) }));
    const other = createApp({ config, db, logger: log, mailer });
    expectSuccess(await api(other, a).form('/sender/save', fields()), 'Added Successfully');
    expect(lines.join('')).not.toContain('senders/verify/');
  });
});
