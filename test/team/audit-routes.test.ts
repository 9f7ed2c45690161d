import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEYS_LABEL } from '../../src/audit/record';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { signInAs, type SignedIn } from '../helpers/team';

/**
 * Issue 37: every change made through the API or the dashboard writes one audit entry with the
 * right actor: "API keys" (no user, via api) for the keys, the user (id, email, via dashboard) for
 * a signed-in session, whether the dashboard ran an API route or not. A refused change writes none.
 * Summaries never hold a contact's address.
 */
const { app, db } = setupApp({ WEBHOOK_ALLOW_HOSTS: '127.0.0.1' });

interface Entry {
  id: string;
  member_id: number | null;
  actor: string;
  via: string;
  address: string | null;
  action: string;
  object_kind: string | null;
  object_id: string | null;
  summary: string;
}

let account: TestAccount;
let refs: { sender: number; group: number; list: number };
let country: number;

beforeAll(async () => {
  account = await makeAccount(db, 'Audit');
  refs = { sender: await makeSender(db, account), group: await makeGroup(db, account), list: await makeContactType(db, account) };
  country = ((await db('countries').where({ iso_code: 'GB' }).first('id')) as { id: number }).id;
});

async function lastId(): Promise<number> {
  const row = (await db('audit_log').where({ user_id: account.id }).max('id as id').first()) as { id: string | null };
  return Number(row.id ?? 0);
}

/** The entries `change` wrote (it must write exactly one). */
async function oneEntry(change: () => Promise<unknown>): Promise<Entry> {
  const before = await lastId();
  await change();
  const rows = (await db('audit_log').where({ user_id: account.id }).where('id', '>', before).orderBy('id')) as Entry[];
  expect(rows.map((r) => r.action)).toHaveLength(1);
  return rows[0];
}

function byKeys(e: Entry, action: string, objectKind: string, objectId?: string | number | null) {
  expect(e).toMatchObject({ member_id: null, actor: KEYS_LABEL, via: 'api', action, object_kind: objectKind });
  expect(e.address).toBeTruthy();
  if (objectId !== undefined) expect(e.object_id).toBe(objectId === null ? null : String(objectId));
}

describe('audit entries of changes made through the API (the keys)', () => {
  it('a send created (a draft) and scheduled', async () => {
    let utr = '';
    const created = await oneEntry(async () => {
      utr = (await createSend(app, db, account, refs, { draft: 1, single_send_name: 'Spring news' })).utr;
    });
    byKeys(created, 'single_send.created', 'single_send', utr);
    expect(created.summary).toBe('“Spring news”, a draft');
    const at = new Date(Date.now() + 86_400_000).toISOString().slice(0, 19).replace('T', ' ');
    const scheduled = await oneEntry(async () => expectSuccess(await api(app, account).form('/single/send/schedule', { utr, send_at: at })));
    byKeys(scheduled, 'single_send.scheduled', 'single_send', utr);
    expect(scheduled.summary).toBe(`for ${at} UTC`);
  });

  it('a list, a contact, a segment, a design', async () => {
    const list = await oneEntry(async () => expectSuccess(await api(app, account).form('/contacts-type/add', { name: 'Customers' })));
    byKeys(list, 'contact_type.created', 'contact_type');
    expect(list.summary).toBe('list “Customers”');

    const contact = await oneEntry(async () => expectSuccess(await api(app, account).form('/contacts/add', { contact_type_id: refs.list, email: 'carol@example.com', country })));
    byKeys(contact, 'contact.created', 'contact');
    expect(contact.summary).not.toContain('carol');

    const email = (await db('fields').whereNull('user_id').where({ field_name: 'email' }).first('id')) as { id: number };
    const segment = await oneEntry(async () =>
      expectSuccess(await api(app, account).form('/segment/save', { segment_name: 'Gmail', contact_type_id: refs.list, select_field: [email.id], select_operator: ['contains'], value: ['gmail'] })),
    );
    byKeys(segment, 'segment.created', 'segment');
    expect(segment.summary).toBe(`“Gmail” over list ${refs.list}, 1 rule`);

    let designId = 0;
    const design = await oneEntry(async () => {
      const res = await api(app, account).form('/designs/save', { template_name: 'Plain', format: 'html', source: '<p>Hello ((first_name))</p>' });
      expectSuccess(res);
      designId = res.body.message.id;
    });
    byKeys(design, 'design.created', 'design', designId);
    expect(design.summary).toBe('“Plain” (html)');
    expect(design.summary).not.toContain('<p>');
  });

  it('a sender, a webhook (its secret never in the entry), a suppression added and lifted', async () => {
    const sender = await oneEntry(async () =>
      expectSuccess(
        await api(app, account).form('/sender/save', {
          from_name: 'Acme',
          from_email: 'hello@acme.test',
          reply_to_email: 'reply@acme.test',
          country_id: country,
          company_address: '1 High Street',
          nickname: 'hello',
        }),
      ),
    );
    byKeys(sender, 'sender.created', 'sender');
    expect(sender.summary).toContain('“hello”');

    let secret = '';
    let hookId = 0;
    const hook = await oneEntry(async () => {
      const res = await api(app, account).form('/webhooks/save', { url: 'http://127.0.0.1:9/hook?token=abc123', event_types: 'delivered' });
      expectSuccess(res);
      ({ id: hookId, secret } = res.body.message as { id: number; secret: string });
    });
    byKeys(hook, 'webhook.saved', 'webhook', hookId);
    expect(hook.summary).toBe('created: 127.0.0.1:9, 1 event type');
    expect(JSON.stringify(hook)).not.toContain(secret);
    expect(hook.summary).not.toContain('abc123');

    const added = await oneEntry(async () => expectSuccess(await api(app, account).form('/suppressions/add', { emails: 'x@example.com, y@example.com' })));
    byKeys(added, 'suppression.created', 'suppression');
    expect(added.summary).toBe('2 addresses suppressed by hand');
    const lifted = await oneEntry(async () => expectSuccess(await api(app, account).delete('/suppressions/delete?emails=x@example.com')));
    byKeys(lifted, 'suppression.lifted', 'suppression');
    expect(lifted.summary).toBe('lifted for 1 address');
  });

  it('a contact erased: the entry counts rows and never names the address', async () => {
    await makeContacts(db, account, refs.list, [{ email: 'dora@example.com' }]);
    const erased = await oneEntry(async () => expectSuccess(await api(app, account).form('/contacts/erase', { email: 'dora@example.com' })));
    byKeys(erased, 'contact.erased', 'erasure');
    expect(erased.object_id).toMatch(/^\d+$/);
    expect(erased.summary).toMatch(/^\d+ rows? removed$/);
    expect(JSON.stringify(erased)).not.toContain('dora');
  });

  it('an export is on record before its first byte: a client holding the download already finds the entry', async () => {
    // Enough rows that the server waits on the paused client (the socket's buffers fill), so an
    // entry written only after the last byte could not be there yet.
    const list = await makeContactType(db, account);
    const rows = Array.from({ length: 30_000 }, (_, i) => ({ email: `held${i}@example.com`, first_name: 'x'.repeat(60) }));
    for (let i = 0; i < rows.length; i += 5000) await makeContacts(db, account, list, rows.slice(i, i + 5000));
    const before = await lastId();
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
        http.get({ host: '127.0.0.1', port, path: `/contacts/export?contact_type_id=${list}`, headers: account.headers }, resolve).on('error', reject),
      );
      expect(res.statusCode).toBe(200);
      await new Promise((resolve) => res.once('readable', resolve));
      res.pause();
      const rowsNow = (await db('audit_log').where({ user_id: account.id }).where('id', '>', before)) as Entry[];
      expect(rowsNow.map((r) => [r.action, r.object_id])).toEqual([['contacts.exported', String(list)]]);
      res.resume();
      await new Promise((resolve) => res.on('data', () => undefined).once('end', resolve));
      expect(await lastId()).toBe(Number(rowsNow[0].id));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('an export refused (no list, another account\'s list) writes nothing', async () => {
    const before = await lastId();
    expect((await api(app, account).get('/contacts/export')).status).toBe(422);
    expect((await api(app, account).get('/contacts/export?contact_type_id=999999999')).status).toBe(404);
    expect(await lastId()).toBe(before);
  });

  it('a read writes nothing; a refusal (validation) writes nothing', async () => {
    const before = await lastId();
    await api(app, account).get('/contacts-type');
    await api(app, account).form('/contacts-type/add', {});
    expect(await lastId()).toBe(before);
  });
});

describe('audit entries of changes made in the dashboard (a user)', () => {
  let admin: SignedIn;
  let editor: SignedIn;
  beforeAll(async () => {
    admin = await signInAs(app, db, account.id, 'admin');
    editor = await signInAs(app, db, account.id, 'editor');
  });

  function byUser(e: Entry, s: SignedIn, action: string, objectKind: string) {
    expect(e).toMatchObject({ member_id: s.member.id, actor: s.member.email, via: 'dashboard', action, object_kind: objectKind });
  }
  const post = (s: SignedIn, url: string, fields: Record<string, string> = {}) => s.agent.post(url).type('form').send({ _csrf: s.csrf, ...fields });

  it('a list created through its form (an API route)', async () => {
    const e = await oneEntry(async () => expect((await post(editor, '/app/lists/new', { name: 'From the dashboard' })).status).toBe(303));
    byUser(e, editor, 'contact_type.created', 'contact_type');
  });

  it('a send scheduled (an API route) by an admin; the same refused to an editor writes nothing', async () => {
    const { utr } = await createSend(app, db, account, refs, { draft: 1 });
    const before = await lastId();
    const refused = await post(editor, `/app/sends/${utr}/schedule`, { send_at: '2099-01-01T10:00' });
    expect(refused.status).toBe(403);
    expect(await lastId()).toBe(before);
    const e = await oneEntry(async () => expect((await post(admin, `/app/sends/${utr}/schedule`, { send_at: '2099-01-01T10:00' })).status).toBe(303));
    byUser(e, admin, 'single_send.scheduled', 'single_send');
    expect(e.object_id).toBe(utr);
  });

  it('a send duplicated and a suppression lifted (no API route: the page writes the entry)', async () => {
    const { utr } = await createSend(app, db, account, refs, { draft: 1 });
    const copy = await oneEntry(async () => expect((await post(editor, `/app/sends/${utr}/duplicate`)).status).toBe(303));
    byUser(copy, editor, 'single_send.duplicated', 'single_send');
    expect(copy.object_id).toBe(utr);

    await api(app, account).form('/suppressions/add', { emails: 'lift.me@example.com' });
    const lifted = await oneEntry(async () => expect((await post(admin, '/app/suppressions/lift', { email: 'lift.me@example.com' })).status).toBe(303));
    byUser(lifted, admin, 'suppression.lifted', 'suppression');
    expect(lifted.summary).not.toContain('lift.me');
  });

  it('a contact deleted from its page', async () => {
    const [id] = await makeContacts(db, account, refs.list, [{ email: `${randomUUID()}@example.com` }]);
    const e = await oneEntry(async () => expect((await post(editor, `/app/contacts/${id}/delete`)).status).toBe(303));
    byUser(e, editor, 'contact.deleted', 'contact');
    expect(e.object_id).toBe(String(id));
  });
});
