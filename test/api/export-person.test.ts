import request from 'supertest';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectSuccess, expectVal } from '../helpers/expect';
import { countryId, writePerson, type PersonWorld } from '../helpers/person';

/**
 * GET /contacts/export-person (issue 35): one JSON document with every kind of row the account
 * holds about the address, and nothing of another account's.
 */
// The sends made here are running: soft-delete them so that worker databases cloned later do not send them.
afterAll(async () => {
  await db('single_sends').whereIn('user_id', [a.id, b.id]).update({ deleted_at: db.fn.now() });
});
const { app, db } = setupApp();

const EMAIL = 'Xena.Export@Example.com';
let a: TestAccount;
let b: TestAccount;
let world: PersonWorld;

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  world = await writePerson(app, db, a, EMAIL);
  const [listB] = await db('contact_types').insert({ user_id: b.id, name: 'B list' }).returning('id');
  expectSuccess(await api(app, b).form('/contacts/add', { country: await countryId(db), contact_type_id: listB.id, email: EMAIL, first_name: 'Other' }));
}, 60_000);

const exportOf = (account: TestAccount, email: string) => api(app, account).get(`/contacts/export-person?email=${encodeURIComponent(email)}`);

describe('GET /contacts/export-person', () => {
  it('holds every kind of row: contacts with fields, lists, consent, pending subscriptions, unsubscribes, suppressions, segments, automations, recipient rows and events', async () => {
    const res = await exportOf(a, EMAIL.toLowerCase());
    expectSuccess(res);
    const p = res.body.message.person;
    expect(p.email).toBe(EMAIL.toLowerCase());
    // Three contacts (one deleted), in the order they were made; the import's carries its id.
    expect(p.contacts.map((c: { contact_type_id: number; deleted_at: string | null }) => [c.contact_type_id, c.deleted_at === null])).toEqual([
      [world.lists[0], true],
      [world.lists[1], true],
      [world.lists[2], false],
    ]);
    expect(p.contacts[0]).toMatchObject({ first_name: 'Erin', last_name: 'Example', custom_fields: {} });
    expect(p.contacts[1].import_id).toEqual(expect.any(Number));
    expect(p.lists.map((l: { contact_type_id: number }) => l.contact_type_id)).toEqual([world.lists[0], world.lists[1]]);
    expect(p.consent.map((c: { source: string }) => c.source).sort()).toEqual(['api', 'api', 'form', 'import']);
    expect(p.pending_subscriptions).toEqual([expect.objectContaining({ form_id: 5, ip: '203.0.113.7', consent_text: 'Yes please' })]);
    expect(p.unsubscribes.global).toHaveLength(1);
    expect(p.unsubscribes.groups).toEqual([expect.objectContaining({ unsubscribe_groups_id: world.groupId })]);
    expect(p.suppressions).toEqual([expect.objectContaining({ type: 'manual' })]);
    expect(p.segments).toHaveLength(1);
    expect(p.automations).toEqual([expect.objectContaining({ state: 'active' })]);
    expect(p.deliveries.map((d: { id: number }) => Number(d.id)).sort((x: number, y: number) => x - y)).toEqual([world.queuedRowId, world.sentRowId].sort((x, y) => x - y));
    expect(p.events.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['delivered', 'opened', 'contact.confirmed']));
    expect(p.truncated).toEqual({ deliveries: false, events: false });
    // Nothing of the other account's contact of the same address.
    expect(JSON.stringify(p)).not.toContain('Other');
  });

  it('after an erasure, holds only the erased suppression', async () => {
    expectSuccess(await api(app, a).form('/contacts/erase', { email: EMAIL }));
    const p = (await exportOf(a, EMAIL)).body.message.person;
    expect(p.suppressions).toEqual([expect.objectContaining({ type: 'erased', email: expect.stringMatching(/^erased:[0-9a-f]{64}$/) })]);
    for (const k of ['contacts', 'lists', 'consent', 'pending_subscriptions', 'segments', 'automations', 'deliveries', 'events']) expect([k, p[k]]).toEqual([k, []]);
    expect(p.unsubscribes).toEqual({ global: [], groups: [] });
  });

  it('an address the account does not hold gives an empty document; another account sees only its own', async () => {
    const res = await exportOf(b, 'nobody@example.com');
    expectSuccess(res);
    expect(res.body.message.person).toMatchObject({ contacts: [], consent: [], deliveries: [], events: [], suppressions: [] });
    const mine = (await exportOf(b, EMAIL)).body.message.person;
    expect(mine.contacts).toEqual([expect.objectContaining({ first_name: 'Other' })]);
    expect(mine.suppressions).toEqual([]);
  });

  it('VAL for a missing or bad email; AUTH without keys', async () => {
    expectVal(await api(app, a).get('/contacts/export-person'), { email: ['The email field is required.'] });
    expectVal(await exportOf(a, 'not an address'), { email: ['The email must be a valid email address.'] });
    expectAuthMissing(await request(app).get('/contacts/export-person?email=a@example.com'));
  });
});
