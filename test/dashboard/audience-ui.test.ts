import fs from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium, loopbackOnly } from '../helpers/browser';
import { makeContacts, makeContactType, makeSegment } from '../helpers/fixtures';
import { serve, type Served } from './lib/serve';
import { signIn, type Browserish } from './lib/session';
import { measureWidth } from './lib/width';

/**
 * Lists, contacts and segments in the dashboard (issue 34): each action through the API's own
 * route, refused without the CSRF token, another account's list, contact or segment a 404 page,
 * a refused form with the API's words beside the field and what was typed kept; the CSV import's
 * mapping step (`;` and tab files), the segment builder's live count, the CSV exports. Then the
 * same in Chromium: sign in, make a list, add two contacts, import through the mapping step,
 * build a segment and see its count (axe-core, no console error, 375 px).
 */
const { app, db } = setupApp();
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let a: TestAccount;
let b: TestAccount;
let sa: Browserish;
let sb: Browserish;
/** Account b's list, contact and segment: account a must not reach them. */
let other: { list: number; contact: number; segment: number };
let norway: number;
let emailField: number;
let firstNameField: number;

beforeAll(async () => {
  [a, b] = await Promise.all([makeAccount(db, 'Audience'), makeAccount(db, 'Audience stranger')]);
  [sa, sb] = await Promise.all([signIn(app, a), signIn(app, b)]);
  const list = await makeContactType(db, b, 'Theirs');
  const [contact] = await makeContacts(db, b, list, [{ email: 'theirs@example.com', first_name: 'Theirs' }]);
  other = { list, contact, segment: await makeSegment(db, b, list) };
  norway = (await db('countries').where({ iso_code: 'NO' }).first('id')).id;
  emailField = (await db('reserved_fields').where({ field_name: 'email' }).first('id')).id;
  firstNameField = (await db('reserved_fields').where({ field_name: 'first_name' }).first('id')).id;
  await api(app, a).form('/custom-fields/save', { field_name: 'plan', field_type: 'text' });
});

const get = (path: string, s: Browserish = sa) => request(app).get(path).set('Cookie', s.cookie);
const post = (path: string, fields: Record<string, string>, s: Browserish = sa) =>
  request(app)
    .post(path)
    .set('Cookie', s.cookie)
    .type('form')
    .send({ _csrf: s.csrf, ...fields });
const postWithoutToken = (path: string, fields: Record<string, string>) => request(app).post(path).set('Cookie', sa.cookie).type('form').send(fields);

/** The messages shown beside a field (its `field-errors` list), and its value as the form shows it. */
function besideField(html: string, id: string): string[] {
  const m = new RegExp(`<ul class="field-errors" id="${id}-errors">(.*?)</ul>`).exec(html);
  return m ? [...m[1].matchAll(/<li>(.*?)<\/li>/g)].map((x) => x[1].replace(/&#39;|&apos;/g, "'").replace(/&quot;/g, '"')) : [];
}
const inputValue = (html: string, id: string) => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(html)?.[1] ?? new RegExp(`value="([^"]*)"[^>]*id="${id}"`).exec(html)?.[1];

async function listId(name: string, account = a): Promise<number> {
  const types = (await api(app, account).get('/contacts-type')).body.message.contactTypes as Array<{ id: number; name: string }>;
  return types.find((t) => t.name === name)!.id;
}

async function contactsOf(typeId: number) {
  const all = (await api(app, a).get('/contacts/list')).body.message.contacts as Array<Record<string, unknown> & { email: string; contact_type_id: number }>;
  return all.filter((c) => c.contact_type_id === typeId);
}

describe('lists', () => {
  it('creating one: refused without the token; a short name refused beside the field, kept; then the list’s page', async () => {
    expect((await postWithoutToken('/app/lists/new', { name: 'Newsletter' })).status).toBe(403);
    const short = await post('/app/lists/new', { name: 'N' });
    expect(short.status).toBe(422);
    expect(besideField(short.text, 'field-name')).toEqual(['The name must be at least 2 characters.']);
    expect(inputValue(short.text, 'field-name')).toBe('N');
    const made = await post('/app/lists/new', { name: 'Newsletter' });
    expect(made.status).toBe(303);
    const id = await listId('Newsletter');
    expect(made.headers.location).toBe(`/app/lists/${id}?done=created`);
    const page = await get(made.headers.location);
    expect(page.status).toBe(200);
    expect(page.text).toContain('The list was created.');
    const taken = await post('/app/lists/new', { name: 'newsletter' });
    expect(taken.status).toBe(422);
    expect(besideField(taken.text, 'field-name')).toEqual(['The name has already been taken.']);
  });

  it('renaming and deleting one (the confirmation names how many contacts go with it)', async () => {
    await post('/app/lists/new', { name: 'Old name' });
    const id = await listId('Old name');
    await makeContacts(db, a, id, [{ email: 'one@example.com' }, { email: 'two@example.com' }, { email: 'three@example.com' }]);
    expect((await postWithoutToken(`/app/lists/${id}/edit`, { name: 'New name' })).status).toBe(403);
    const refused = await post(`/app/lists/${id}/edit`, { name: '' });
    expect(refused.status).toBe(422);
    expect(besideField(refused.text, 'field-name')).toEqual(['The name field is required.']);
    expect((await post(`/app/lists/${id}/edit`, { name: 'New name' })).headers.location).toBe(`/app/lists/${id}?done=renamed`);
    expect((await api(app, a).get(`/contacts-type/view?contact_type_id=${id}`)).body.message.contactType.name).toBe('New name');
    const confirm = await get(`/app/lists/${id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Delete the list and its 3 contacts');
    expect((await postWithoutToken(`/app/lists/${id}/delete`, {})).status).toBe(403);
    const deleted = await post(`/app/lists/${id}/delete`, {});
    expect(deleted.headers.location).toBe('/app/contacts?done=list-deleted');
    expect((await api(app, a).get(`/contacts-type/view?contact_type_id=${id}`)).status).toBe(404);
    expect(await contactsOf(id)).toEqual([]);
  });

  it('browsing a page at a time and searching by part of an address or a name', async () => {
    const id = await makeContactType(db, a, 'Big');
    await makeContacts(
      db,
      a,
      id,
      Array.from({ length: 60 }, (_, i) => ({ email: `person${String(i).padStart(2, '0')}@example.com`, first_name: i === 7 ? 'Grace' : 'Someone' })),
    );
    const first = await get(`/app/lists/${id}`);
    expect(first.status).toBe(200);
    expect((first.text.match(/<tr><td data-label="Address">/g) ?? []).length).toBe(50);
    expect(first.text).toContain('Page 1 of 2');
    const second = await get(`/app/lists/${id}?page=2`);
    expect((second.text.match(/<tr><td data-label="Address">/g) ?? []).length).toBe(10);
    expect(second.text).toContain('person00@example.com');
    const byName = await get(`/app/lists/${id}?q=grac`);
    expect(byName.text).toContain('person07@example.com');
    expect((byName.text.match(/<tr><td data-label="Address">/g) ?? []).length).toBe(1);
    const byAddress = await get(`/app/lists/${id}?q=son1`);
    expect((byAddress.text.match(/<tr><td data-label="Address">/g) ?? []).length).toBe(10);
    const tooLong = await get(`/app/lists/${id}?q=${'x'.repeat(300)}`);
    expect(besideField(tooLong.text, 'field-q')).toEqual(['The q must not be greater than 255 characters.']);
  });

  it('another account’s list is a 404 page for every action', async () => {
    for (const path of [`/app/lists/${other.list}`, `/app/lists/${other.list}/edit`, `/app/lists/${other.list}/delete`, `/app/lists/${other.list}/contacts/new`, `/app/lists/${other.list}/export.csv`]) {
      const res = await get(path);
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.text).toContain('<h1>Not found</h1>');
    }
    expect((await post(`/app/lists/${other.list}/edit`, { name: 'Mine now' })).status).toBe(404);
    expect((await post(`/app/lists/${other.list}/delete`, {})).status).toBe(404);
    expect((await post(`/app/lists/${other.list}/contacts/new`, { email: 'x@example.com', country: String(norway) })).status).toBe(404);
    expect((await api(app, b).get(`/contacts-type/view?contact_type_id=${other.list}`)).body.message.contactType.name).toMatch(/^Theirs/);
    expect((await contactsOfB(other.list)).map((c) => c.email)).toEqual(['theirs@example.com']);
  });
});

async function contactsOfB(typeId: number) {
  const all = (await api(app, b).get('/contacts/list')).body.message.contacts as Array<{ email: string; contact_type_id: number }>;
  return all.filter((c) => c.contact_type_id === typeId);
}

describe('contacts', () => {
  let list: number;
  beforeAll(async () => {
    list = await makeContactType(db, a, 'People');
  });

  it('adding one: refused beside the field with what was typed kept; then on the list with its custom value', async () => {
    expect((await postWithoutToken(`/app/lists/${list}/contacts/new`, { email: 'ada@example.com', country: String(norway) })).status).toBe(403);
    const bad = await post(`/app/lists/${list}/contacts/new`, { email: 'not-an-address', first_name: 'Ada', country: '', plan: 'gold' });
    expect(bad.status).toBe(422);
    expect(besideField(bad.text, 'field-email')).toEqual(['The email must be a valid email address.']);
    expect(besideField(bad.text, 'field-country')).toEqual(['The country field is required.']);
    expect(inputValue(bad.text, 'field-email')).toBe('not-an-address');
    expect(inputValue(bad.text, 'field-first_name')).toBe('Ada');
    expect(inputValue(bad.text, 'field-plan')).toBe('gold');
    const added = await post(`/app/lists/${list}/contacts/new`, { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', country: String(norway), plan: 'gold' });
    expect(added.status).toBe(303);
    expect(added.headers.location).toBe(`/app/lists/${list}?done=added`);
    const [ada] = await contactsOf(list);
    expect(ada).toMatchObject({ email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', custom_field: { plan: { field_value: 'gold' } } });
    const again = await post(`/app/lists/${list}/contacts/new`, { email: 'ADA@example.com', country: String(norway) });
    expect(besideField(again.text, 'field-email')).toEqual(['The email has already been taken.']);
  });

  it('editing one (a custom value cleared), unsubscribing and re-subscribing it, deleting it', async () => {
    const [id] = await makeContacts(db, a, list, [{ email: 'bob@example.com', first_name: 'Bob', country_id: norway }]);
    await api(app, a).form('/contacts/update', { contact_id: id, contact_type_id: list, email: 'bob@example.com', country: norway, plan: 'silver' });
    const form = await get(`/app/contacts/${id}/edit`);
    expect(form.status).toBe(200);
    expect(inputValue(form.text, 'field-plan')).toBe('silver');
    expect((await postWithoutToken(`/app/contacts/${id}/edit`, { email: 'bob@example.com' })).status).toBe(403);
    const bad = await post(`/app/contacts/${id}/edit`, { contact_type_id: String(list), email: 'bob@example.com', first_name: 'x'.repeat(256), country: String(norway) });
    expect(bad.status).toBe(422);
    expect(besideField(bad.text, 'field-first_name')).toEqual(['The first name must not be greater than 255 characters.']);
    const saved = await post(`/app/contacts/${id}/edit`, { contact_type_id: String(list), email: 'bob@example.com', first_name: 'Robert', country: String(norway), plan: '' });
    expect(saved.headers.location).toBe(`/app/contacts/${id}?done=saved`);
    const detail = (await api(app, a).get(`/contacts/details?contact_id=${id}`)).body.message.contact;
    expect(detail.first_name).toBe('Robert');
    expect(detail.custom_field?.plan?.field_value ?? null).toBeNull();

    expect((await postWithoutToken(`/app/contacts/${id}/unsubscribe`, {})).status).toBe(403);
    expect((await post(`/app/contacts/${id}/unsubscribe`, {})).headers.location).toBe(`/app/contacts/${id}?done=unsubscribed`);
    const unsubscribed = (await api(app, a).get('/global-unsubscribes')).body.message.unSubscribers as Array<{ email_address: string }>;
    expect(unsubscribed.map((u) => u.email_address)).toContain('bob@example.com');
    expect((await get(`/app/contacts/${id}`)).text).toContain('Re-subscribe');
    expect((await post(`/app/contacts/${id}/resubscribe`, {})).headers.location).toBe(`/app/contacts/${id}?done=resubscribed`);
    expect(((await api(app, a).get('/global-unsubscribes')).body.message.unSubscribers as Array<{ email_address: string }>).map((u) => u.email_address)).not.toContain('bob@example.com');

    expect((await postWithoutToken(`/app/contacts/${id}/delete`, {})).status).toBe(403);
    expect((await post(`/app/contacts/${id}/delete`, {})).headers.location).toBe(`/app/lists/${list}?done=contact-deleted`);
    expect((await api(app, a).get(`/contacts/details?contact_id=${id}`)).status).toBe(404);
  });

  it('another account’s contact is a 404 page for every action, and stays as it was', async () => {
    expect((await get(`/app/contacts/${other.contact}/edit`)).status).toBe(404);
    for (const action of ['edit', 'delete', 'unsubscribe', 'resubscribe']) {
      const res = await post(`/app/contacts/${other.contact}/${action}`, { email: 'mine@example.com', country: String(norway), contact_type_id: String(other.list) });
      expect({ action, status: res.status }).toEqual({ action, status: 404 });
    }
    expect((await api(app, b).get(`/contacts/details?contact_id=${other.contact}`)).body.message.contact.email).toBe('theirs@example.com');
    expect((await api(app, b).get('/global-unsubscribes')).body.message.unSubscribers).toEqual([]);
  });
});

describe('the CSV import’s mapping step', () => {
  let list: number;
  beforeAll(async () => {
    list = await makeContactType(db, a, 'Imported');
  });

  const upload = (csv: string, name = 'people.csv', s: Browserish = sa, target = list) =>
    request(app).post(`/app/lists/${target}/import`).set('Cookie', s.cookie).field('_csrf', s.csrf).attach('file', Buffer.from(csv), name);

  it('a `;` file: its header against Herald’s fields, guessed where the names match, the first rows; imported as mapped', async () => {
    const csv = ['Email Address;Vorname;Notiz;plan', 'cy@example.com;Cy;"a; b";gold', 'di@example.com;Di;;', ''].join('\r\n');
    const uploaded = await upload(csv);
    expect(uploaded.status).toBe(303);
    const mapping = uploaded.headers.location as string;
    expect(mapping).toMatch(new RegExp(`^/app/lists/${list}/import/[0-9a-f]{32}$`));
    const page = await get(mapping);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Column 2: Vorname');
    expect(page.text).toContain('a; b');
    expect(page.text).toMatch(/<option value="semicolon" selected>/);
    // `Email Address` reads as email and `plan` as the custom field, as the import reads a header; the rest waits for a choice.
    expect(page.text).toMatch(/id="field-column_0"[^>]*>(?:(?!<\/select>).)*<option value="email" selected>/s);
    expect(page.text).toMatch(/id="field-column_3"[^>]*>(?:(?!<\/select>).)*<option value="plan" selected>/s);
    expect((await postWithoutToken(mapping, { delimiter: 'semicolon', column_0: 'email' })).status).toBe(403);
    const done = await post(mapping, { delimiter: 'semicolon', column_0: 'email', column_1: 'first_name', column_2: '', column_3: 'plan' });
    expect(done.status).toBe(303);
    expect(done.headers.location).toMatch(new RegExp(`^/app/lists/${list}\\?imported=\\d+$`));
    expect((await get(done.headers.location)).text).toContain('Imported people.csv: created 2, updated 0, refused 0.');
    const people = (await contactsOf(list)).map((c) => ({ email: c.email, first_name: c.first_name, plan: (c.custom_field as Record<string, { field_value: string }> | null)?.plan?.field_value ?? null }));
    expect(people.sort((x, y) => x.email.localeCompare(y.email))).toEqual([
      { email: 'cy@example.com', first_name: 'Cy', plan: 'gold' },
      { email: 'di@example.com', first_name: 'Di', plan: null },
    ]);
    // The kept file is gone once imported.
    expect((await get(mapping)).status).toBe(404);
  });

  it('a tab file, the delimiter chosen again on the page; a mapping without an address refused with the import’s words, choices kept', async () => {
    const uploaded = await upload(['address\tname', 'ed@example.com\tEd', ''].join('\n'), 'tabs.csv');
    const mapping = uploaded.headers.location as string;
    const asTab = await get(mapping);
    expect(asTab.text).toMatch(/<option value="tab" selected>/);
    expect(asTab.text).toContain('Column 2: name');
    const asComma = await get(`${mapping}?delimiter=comma`);
    expect(asComma.text).not.toContain('Column 2:');
    const refused = await post(mapping, { delimiter: 'tab', column_0: '', column_1: 'first_name' });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('The file must have a header row with an email column.');
    expect(refused.text).toMatch(/id="field-column_1"[^>]*>(?:(?!<\/select>).)*<option value="first_name" selected>/s);
    const done = await post(mapping, { delimiter: 'tab', column_0: 'email', column_1: 'first_name' });
    expect(done.status).toBe(303);
    expect((await contactsOf(list)).map((c) => c.email)).toContain('ed@example.com');
  });

  it('an upload refused as the API refuses it, beside the file field; without the token; another account’s list or kept file', async () => {
    const wrongType = await upload('email\nx@example.com\n', 'people.xlsx');
    expect(wrongType.status).toBe(422);
    expect(besideField(wrongType.text, 'field-file')).toEqual(['The file must be a file of type: csv.']);
    const binary = await upload('PK\u0003\u0004binary', 'zip.csv');
    expect(besideField(binary.text, 'field-file')).toEqual(['The file must be a file of type: csv.']);
    const noToken = await request(app).post(`/app/lists/${list}/import`).set('Cookie', sa.cookie).attach('file', Buffer.from('email\n'), 'x.csv');
    expect(noToken.status).toBe(403);
    expect((await upload('email\nx@example.com\n', 'x.csv', sa, other.list)).status).toBe(404);
    const theirs = (await upload('email\nx@example.com\n', 'x.csv', sb, other.list)).headers.location as string;
    expect(theirs).toMatch(/\/import\/[0-9a-f]{32}$/);
    expect((await get(theirs)).status).toBe(404);
    const token = theirs.split('/').pop();
    expect((await get(`/app/lists/${list}/import/${token}`)).status).toBe(404);
    expect((await post(`/app/lists/${list}/import/${token}`, { column_0: 'email' })).status).toBe(404);
    expect((await get(theirs, sb)).status).toBe(200);
  });
});

describe('segments', () => {
  let list: number;
  beforeAll(async () => {
    list = await makeContactType(db, a, 'Segmented');
    await makeContacts(db, a, list, [
      { email: 'ann@example.com', first_name: 'Ann' },
      { email: 'amy@example.com', first_name: 'Amy' },
      { email: 'zed@example.org', first_name: 'Zed' },
    ]);
  });

  const rules = (extra: Record<string, string> = {}) => ({
    segment_name: 'Example.com people',
    contact_type_id: String(list),
    query_type: 'and',
    'select_field.0': String(emailField),
    'select_operator.0': 'ends with',
    'value.0': 'example.com',
    ...extra,
  });

  it('the builder offers Herald’s fields and operators; the live count; saved; the members; updated; deleted', async () => {
    const form = await get(`/app/segments/new?contact_type_id=${list}`);
    expect(form.status).toBe(200);
    expect(form.text).toContain(`<option value="${emailField}">email (text)</option>`);
    expect(form.text).toContain('<option value="plan"'.replace('plan', String((await db('custom_fields').where({ user_id: a.id, field_name: 'plan' }).first('id')).id)));
    for (const op of ['is between', 'does not contain', 'is before']) expect(form.text).toContain(`>${op}</option>`);

    const count = await get(`/app/segments/count?${new URLSearchParams(rules())}`);
    expect(count.status).toBe(200);
    expect(count.body).toEqual({ status: 'success', message: { count: 2 } });
    const incomplete = await get(`/app/segments/count?${new URLSearchParams(rules({ 'select_operator.0': 'is greater than' }))}`);
    expect(incomplete.status).toBe(422);
    expect(incomplete.body.errors['select_operator.0'][0]).toMatch(/^The select operator.0 must be one of: is, is not, contains/);

    const more = await post('/app/segments/new', { ...rules(), more: '1' });
    expect(more.status).toBe(200);
    expect(more.text).toContain('Rule 2');
    expect((await postWithoutToken('/app/segments/new', rules())).status).toBe(403);
    const unnamed = await post('/app/segments/new', rules({ segment_name: '' }));
    expect(unnamed.status).toBe(422);
    expect(besideField(unnamed.text, 'field-segment_name')).toEqual(['The segment name field is required.']);
    expect(inputValue(unnamed.text, 'field-value-0')).toBe('example.com');
    // A row without a field is no rule: the rules after it move up, and their messages with them.
    const refused = await post('/app/segments/new', rules({ 'select_field.1': '', 'select_field.2': String(firstNameField), 'select_operator.2': 'is', 'value.2': '' }));
    expect(refused.status).toBe(422);
    expect(besideField(refused.text, 'field-value-1')).toEqual(['The value.1 field is required.']);
    expect(refused.text).not.toContain('Rule 3');

    const saved = await post('/app/segments/new', rules());
    expect(saved.status).toBe(303);
    const id = Number(/\/app\/segments\/(\d+)\?done=saved$/.exec(saved.headers.location)![1]);
    const page = await get(`/app/segments/${id}`);
    expect(page.text).toContain('2 contacts match the saved rules.');
    const members = await get(`/app/segments/${id}/members`);
    expect(members.status).toBe(200);
    expect(members.text).toContain('ann@example.com');
    expect(members.text).toContain('amy@example.com');
    expect(members.text).not.toContain('zed@example.org');

    const updated = await post(`/app/segments/${id}`, rules({ 'select_operator.0': 'contains', 'value.0': 'an' }));
    expect(updated.headers.location).toBe(`/app/segments/${id}?done=saved`);
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).body.message.segment).toMatchObject({ select_operator: ['contains'], value: ['an'], segment_emails_count: 1 });
    const counted = await get(`/app/segments/count?${new URLSearchParams({ ...rules({ 'select_operator.0': 'contains', 'value.0': 'z' }), segment_id: String(id) })}`);
    expect(counted.body.message.count).toBe(1);

    expect((await postWithoutToken(`/app/segments/${id}/delete`, {})).status).toBe(403);
    expect((await post(`/app/segments/${id}/delete`, {})).headers.location).toBe('/app/contacts?done=segment-deleted');
    expect((await api(app, a).get(`/segment/details?segment_id=${id}`)).status).toBe(404);
  });

  it('another account’s segment is a 404 page; its count is not found', async () => {
    for (const path of [`/app/segments/${other.segment}`, `/app/segments/${other.segment}/members`, `/app/segments/${other.segment}/export.csv`]) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
    }
    expect((await post(`/app/segments/${other.segment}`, rules())).status).toBe(404);
    expect((await post(`/app/segments/${other.segment}/delete`, {})).status).toBe(404);
    expect((await get(`/app/segments/count?${new URLSearchParams({ ...rules(), segment_id: String(other.segment) })}`)).status).toBe(404);
    const theirList = await get(`/app/segments/count?${new URLSearchParams(rules({ contact_type_id: String(other.list) }))}`);
    expect(theirList.status).toBe(422);
    expect(theirList.body.errors.contact_type_id).toEqual(['The selected contact type id is invalid.']);
    expect((await api(app, b).get(`/segment/details?segment_id=${other.segment}`)).status).toBe(200);
  });
});

describe('exports', () => {
  it('a list and a segment as CSV, formulas neutralised; another account’s is not found', async () => {
    const list = await makeContactType(db, a, 'Exported');
    await makeContacts(db, a, list, [
      { email: 'formula@example.com', first_name: '=HYPERLINK("http://evil.test")' },
      { email: 'plain@example.com', first_name: 'Plain' },
    ]);
    const csv = await get(`/app/lists/${list}/export.csv`).buffer(true).parse((res, done) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => done(null, text));
    });
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const body = csv.body as string;
    expect(body).toContain('plain@example.com');
    expect(body).toContain(`'=HYPERLINK`);
    expect(body).not.toMatch(/(^|,)"?=HYPERLINK/m);
    const segment = await makeSegment(db, a, list);
    const seg = await get(`/app/segments/${segment}/export.csv`);
    expect(seg.status).toBe(200);
    expect(seg.text).toContain('formula@example.com');
    expect((await get(`/app/lists/${other.list}/export.csv`)).status).toBe(404);
  });
});

describeBrowser('lists, contacts and segments in a browser', () => {
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let served: Served;
  const problems: string[] = [];

  beforeAll(async () => {
    served = await serve(app);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  async function open(width: number): Promise<void> {
    await context?.close();
    context = await browser.newContext({ viewport: { width, height: 800 } });
    await loopbackOnly(context);
    context.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' && !/status of (404|422)/.test(m.text())) problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  }

  async function axe(): Promise<string[]> {
    await page.evaluate(AXE);
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as { violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** The page fits the window (no sideways scrolling) and passes axe-core. */
  async function checked(): Promise<void> {
    const path = new URL(page.url()).pathname;
    expect({ path, violations: await axe() }).toEqual({ path, violations: [] });
    const width = await measureWidth(page);
    expect({ path, outside: width.outside, scroll: width.scroll }).toEqual({ path, outside: [], scroll: width.view });
  }

  async function click(selector: string): Promise<void> {
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(selector)]);
  }

  it('signs in, makes a list, adds two contacts by hand, imports a `;` file through the mapping step, builds a segment and sees its count (375 px)', async () => {
    const c = await makeAccount(db, 'Audience browser');
    await open(375);
    await page.goto(`${served.base}/app`);
    await page.fill('input[name="public_key"]', c.public_key);
    await page.fill('input[name="secret_key"]', c.secret_key);
    await click('button:has-text("Sign in with the keys")');

    // 1. A list.
    await page.goto(`${served.base}/app/contacts`);
    await click('a:has-text("New list")');
    await checked();
    await page.fill('#field-name', 'Browser list');
    await click('button:has-text("Create the list")');
    expect(await page.locator('h1').innerText()).toBe('Browser list');
    await checked();

    // 2. Two contacts by hand (the first refused once: its message beside the field, the values kept).
    await click('a:has-text("Add a contact")');
    await checked();
    await page.fill('#field-email', 'not an address');
    await page.fill('#field-first_name', 'Ada');
    await page.selectOption('#field-country', { label: 'Norway' });
    await click('button:has-text("Add the contact")');
    expect(await page.locator('#field-email-errors').innerText()).toBe('The email must be a valid email address.');
    expect(await page.inputValue('#field-first_name')).toBe('Ada');
    await checked();
    await page.fill('#field-email', 'ada@example.com');
    await click('button:has-text("Add the contact")');
    await click('a:has-text("Add a contact")');
    await page.fill('#field-email', 'bob@example.org');
    await page.fill('#field-first_name', 'Bob');
    await page.selectOption('#field-country', { label: 'Norway' });
    await click('button:has-text("Add the contact")');
    expect(await page.locator('[data-metric="contacts"]').innerText()).toBe('2');

    // The import: upload, the mapping step, the result.
    const csv = ['Mail;First;Last', 'cy@example.com;Cy;Young', 'di@example.org;Di;"Smith; Jr."', ''].join('\n');
    await page.setInputFiles('#field-file', { name: 'semicolons.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await click('button:has-text("Upload and map the columns")');
    expect(await page.locator('h1').innerText()).toBe('Import semicolons.csv');
    expect(await page.inputValue('#field-delimiter')).toBe('semicolon');
    expect(await page.locator('table[data-table="preview"] tbody tr').count()).toBe(2);
    await checked();
    await page.selectOption('#field-column_0', 'email');
    await page.selectOption('#field-column_1', 'first_name');
    await page.selectOption('#field-column_2', 'last_name');
    await click('#map-form button:has-text("Import")');
    expect(await page.locator('[data-imported]').innerText()).toContain('created 2, updated 0, refused 0');
    expect(await page.locator('[data-metric="contacts"]').innerText()).toBe('4');
    await page.fill('#field-q', 'smith');
    await click('button:has-text("Search")');
    expect(await page.locator('table[data-table="list-contacts"] tbody tr').allInnerTexts()).toEqual([expect.stringContaining('di@example.org')]);
    await checked();

    // 3. A segment and its live count.
    await page.goto(`${served.base}/app/contacts`);
    await click('a:has-text("New segment")');
    await page.fill('#field-segment_name', 'Dot com');
    await page.selectOption('#field-select_field-0', { label: 'email (text)' });
    await page.selectOption('#field-select_operator-0', 'ends with');
    await page.fill('#field-value-0', '.com');
    await page.locator('#segment-count[data-count="2"]').waitFor();
    expect(await page.locator('#segment-count').innerText()).toBe('2 contacts match these rules.');
    await page.fill('#field-value-0', 'y@example.com');
    await page.locator('#segment-count[data-count="1"]').waitFor();
    // A number field's operators only, for a text field the text ones.
    expect(await page.locator('#field-select_operator-0 option:not([disabled])').allInnerTexts()).toEqual(['is', 'is not', 'contains', 'does not contain', 'starts with', 'ends with', 'is empty', 'is not empty']);
    await checked();
    await page.fill('#field-value-0', '.com');
    await click('button:has-text("Save the segment")');
    expect(await page.locator('#segment-count').innerText()).toBe('2 contacts match the saved rules.');
    await click('a:has-text("Open its members")');
    expect(await page.locator('[data-metric="members"]').innerText()).toBe('2');
    await checked();
    expect(problems).toEqual([]);
  }, 180_000);
});
