import request from 'supertest';
import { DEFAULT_CONFIRMATION_SUBJECT, loadPublicForm } from '../../src/forms/forms';
import { readFormPublicId } from '../../src/forms/public-id';
import { countFormConfirmation, countFormSubmission, STAT_SLOTS, statsByDay } from '../../src/forms/stats';
import { secret } from '../../src/db/secrets';
import { NOT_FOUND_1 } from '../../src/http/envelope';
import { formListRecord, formRecord, formSavedResponse, formStatsResponse, REDIRECT_INVALID, REDIRECT_SCHEME } from '../../src/resources/forms/forms.schemas';
import {
  EMAIL_REQUIRED,
  LIST_MISSING,
  NOT_ON_FORMS,
  SENDER_MISSING,
  SENDER_REQUIRED,
  SENDER_UNVERIFIED,
} from '../../src/resources/forms/forms.service';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectNF1, expectSuccess, expectVal } from '../helpers/expect';
import { makeContactType, makeSender } from '../helpers/fixtures';

/** Signup forms (issue 35): the /forms routes and src/forms, which the public endpoint reads. */
const { app, db, config } = setupApp();

let a: TestAccount;
let b: TestAccount;
interface Refs {
  list: number;
  list2: number;
  sender: number;
  unverified: number;
  color: number;
}
const A = {} as Refs;
const B = {} as Refs;

async function refsFor(account: TestAccount, into: Refs): Promise<void> {
  into.list = await makeContactType(db, account, 'Weekly');
  into.list2 = await makeContactType(db, account, 'Offers');
  into.sender = await makeSender(db, account);
  into.unverified = await makeSender(db, account, false);
  const [row] = (await db('custom_fields').insert({ user_id: account.id, field_name: 'favourite_color', field_type: 'text' }).returning('id')) as Array<{
    id: number;
  }>;
  into.color = row.id;
}

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
  await refsFor(a, A);
  await refsFor(b, B);
});

/** A valid form of account a, with these fields changed. */
function formOfA(change: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Newsletter signup',
    contact_type_ids: [A.list],
    fields: [
      { field_name: 'email', required: 1 },
      { field_name: 'first_name', required: 0, label: 'Your first name' },
    ],
    consent_text: 'I agree to receive the newsletter.',
    confirmation_sender_id: A.sender,
    ...change,
  };
}

async function saveOfA(change: Record<string, unknown> = {}): Promise<{ id: number; public_id: string }> {
  const res = await api(app, a).json('/forms/save', formOfA(change));
  expectSuccess(res);
  return expectShape(formSavedResponse, res.body.message);
}

const details = async (account: TestAccount, id: number) => api(app, account).get(`/forms/details?id=${id}`);

describe('POST /forms/save', () => {
  it('saves a form and answers its id and public id; details shows it with the defaults', async () => {
    const saved = await saveOfA({ fields: [{ field_name: 'first_name' }, { field_name: 'favourite_color', required: 1 }] });
    expect(readFormPublicId(await secret(db, 'tracking'), saved.public_id)).toEqual({ userId: a.id, formId: saved.id });
    const res = await details(a, saved.id);
    expectSuccess(res);
    const form = expectShape(formRecord, res.body.message.form);
    expect(form).toMatchObject({
      id: saved.id,
      public_id: saved.public_id,
      name: 'Newsletter signup',
      contact_type_ids: [A.list],
      double_opt_in: 1,
      captcha: 'none',
      consent_text: 'I agree to receive the newsletter.',
      success_url: null,
      confirm_url: null,
      confirmation_subject: DEFAULT_CONFIRMATION_SUBJECT,
      confirmation_sender_id: A.sender,
      hosted_url: `${config.publicUrl}/subscribe/${saved.public_id}`,
      json_url: `${config.publicUrl}/subscribe/${saved.public_id}`,
    });
    // Email is added first, required, when the fields leave it out.
    expect(form.fields).toEqual([
      { field_id: 3, field_name: 'email', is_reserved: 1, label: 'Email', required: 1, input_name: 'email' },
      { field_id: 1, field_name: 'first_name', is_reserved: 1, label: 'First name', required: 0, input_name: 'first_name' },
      {
        field_id: A.color,
        field_name: 'favourite_color',
        is_reserved: 0,
        label: 'Favourite color',
        required: 1,
        input_name: 'custom_field[favourite_color]',
      },
    ]);
  });

  it('takes a multipart body with bracketed names, every optional field, and single opt-in without a sender', async () => {
    const res = await request(app)
      .post('/forms/save')
      .set(a.headers)
      .field('name', 'Multipart')
      .field('contact_type_ids[0]', String(A.list))
      .field('contact_type_ids[1]', String(A.list2))
      .field('fields[0][field_name]', 'EMAIL')
      .field('fields[0][required]', '1')
      .field('fields[1][field_name]', 'last_name')
      .field('fields[1][required]', '1')
      .field('double_opt_in', '0')
      .field('consent_text', 'Yes')
      .field('success_url', 'https://example.com/thanks')
      .field('confirm_url', 'http://example.com/confirmed?x=1')
      .field('confirmation_subject', 'Confirm, please')
      .field('captcha', 'proof_of_work');
    expectSuccess(res);
    const form = (await details(a, res.body.message.id)).body.message.form;
    expect(form).toMatchObject({
      contact_type_ids: [A.list, A.list2],
      double_opt_in: 0,
      captcha: 'proof_of_work',
      success_url: 'https://example.com/thanks',
      confirm_url: 'http://example.com/confirmed?x=1',
      confirmation_subject: 'Confirm, please',
      confirmation_sender_id: null,
    });
    expect(form.fields.map((f: { field_name: string; required: number }) => [f.field_name, f.required])).toEqual([
      ['email', 1],
      ['last_name', 1],
    ]);
  });

  it('VAL: each required field, with the spec’s wording', async () => {
    const res = await api(app, a).json('/forms/save', {});
    expectVal(res, {
      name: ['The name field is required.'],
      contact_type_ids: ['The contact type ids field is required.'],
      fields: ['The fields field is required.'],
      consent_text: ['The consent text field is required.'],
    });
  });

  it('VAL: lengths, flags, captcha and the shape of fields', async () => {
    const res = await api(app, a).json(
      '/forms/save',
      formOfA({
        name: 'x'.repeat(256),
        consent_text: 'x'.repeat(2001),
        double_opt_in: 2,
        captcha: 'recaptcha',
        confirmation_subject: 'x'.repeat(256),
        fields: [{ required: 1 }],
        contact_type_ids: ['abc'],
      }),
    );
    expectVal(res, {
      name: ['The name must not be greater than 255 characters.'],
      consent_text: ['The consent text must not be greater than 2000 characters.'],
      double_opt_in: ['The selected double opt in is invalid.'],
      captcha: ['The selected captcha is invalid.'],
      confirmation_subject: ['The confirmation subject must not be greater than 255 characters.'],
      'fields.0.field_name': ['The fields.0.field name field is required.'],
      'contact_type_ids.0': ['The contact type ids.0 must be an integer.'],
    });
  });

  it('VAL: at most 20 lists and 30 fields; a required flag is 0 or 1', async () => {
    const res = await api(app, a).json(
      '/forms/save',
      formOfA({
        contact_type_ids: Array.from({ length: 21 }, () => A.list),
        fields: [{ field_name: 'email', required: 2 }, ...Array.from({ length: 30 }, () => ({ field_name: 'first_name' }))],
      }),
    );
    expectVal(res, {
      contact_type_ids: ['The contact type ids must not have more than 20 items.'],
      fields: ['The fields must not have more than 30 items.'],
    });
    expectVal(await api(app, a).json('/forms/save', formOfA({ fields: [{ field_name: 'email', required: 2 }] })), {
      'fields.0.required': ['The selected fields.0.required is invalid.'],
    });
  });

  it.each([
    ['ftp://example.com/x', REDIRECT_SCHEME],
    ['javascript:alert(1)', REDIRECT_SCHEME],
    ['data:text/html,hi', REDIRECT_SCHEME],
    ['/thanks', REDIRECT_INVALID],
    ['example.com', REDIRECT_INVALID],
    ['https://user:pw@example.com/', REDIRECT_INVALID],
  ])('VAL: redirect %s refused at save (never fetched)', async (url, message) => {
    const res = await api(app, a).json('/forms/save', formOfA({ success_url: url, confirm_url: url }));
    expectVal(res, {
      success_url: [message.replace(':attribute', 'success url')],
      confirm_url: [message.replace(':attribute', 'confirm url')],
    });
  });

  it('VAL: lists, fields and sender that the account does not have', async () => {
    const res = await api(app, a).json(
      '/forms/save',
      formOfA({
        contact_type_ids: [A.list, B.list],
        fields: [
          { field_name: 'email', required: 0 },
          { field_name: 'nope' },
          { field_name: 'alt_email' },
          { field_name: 'first_name' },
          { field_name: 'First_Name' },
        ],
        confirmation_sender_id: B.sender,
      }),
    );
    expectVal(res, {
      contact_type_ids: [LIST_MISSING],
      'fields.0.required': [EMAIL_REQUIRED],
      'fields.1.field_name': ['The selected fields.1.field name is invalid.'],
      'fields.2.field_name': [NOT_ON_FORMS.replace(':attribute', 'fields.2.field name')],
      'fields.4.field_name': ['The fields.4.field name field has a duplicate value.'],
      confirmation_sender_id: [SENDER_MISSING],
    });
    // Another account's custom field is not this account's.
    expectVal(await api(app, b).json('/forms/save', { ...formOfA(), contact_type_ids: [B.list], confirmation_sender_id: B.sender, fields: [{ field_name: 'nope' }] }), {
      'fields.0.field_name': ['The selected fields.0.field name is invalid.'],
    });
  });

  it('VAL: double opt-in needs a verified sender; a deleted list is not a list', async () => {
    expectVal(await api(app, a).json('/forms/save', formOfA({ confirmation_sender_id: undefined })), { confirmation_sender_id: [SENDER_REQUIRED] });
    expectVal(await api(app, a).json('/forms/save', formOfA({ confirmation_sender_id: A.unverified })), { confirmation_sender_id: [SENDER_UNVERIFIED] });
    expectVal(await api(app, a).json('/forms/save', formOfA({ double_opt_in: 0, confirmation_sender_id: A.unverified })), {
      confirmation_sender_id: [SENDER_UNVERIFIED],
    });
    const gone = await makeContactType(db, a, 'Gone');
    await db('contact_types').where({ user_id: a.id, id: gone }).update({ deleted_at: db.fn.now() });
    expectVal(await api(app, a).json('/forms/save', formOfA({ contact_type_ids: [gone] })), { contact_type_ids: [LIST_MISSING] });
  });

  it('a refused save writes nothing', async () => {
    const before = await db('forms').where({ user_id: a.id }).count('* as n').first();
    await api(app, a).json('/forms/save', formOfA({ contact_type_ids: [B.list] }));
    expect(await db('forms').where({ user_id: a.id }).count('* as n').first()).toEqual(before);
  });

  it('AUTH: no keys', async () => {
    expectAuthMissing(await request(app).post('/forms/save').send(formOfA()));
  });
});

describe('POST /forms/update', () => {
  it('replaces the whole form; the public id stays; optional fields left out go back to their defaults', async () => {
    const saved = await saveOfA({ success_url: 'https://example.com/a', captcha: 'proof_of_work' });
    const res = await api(app, a).json(`/forms/update?id=${saved.id}`, formOfA({ name: 'Renamed', contact_type_ids: [A.list2, A.list], double_opt_in: 0 }));
    expectSuccess(res, { id: saved.id, public_id: saved.public_id });
    const form = (await details(a, saved.id)).body.message.form;
    expect(form).toMatchObject({ name: 'Renamed', contact_type_ids: [A.list2, A.list], double_opt_in: 0, success_url: null, captcha: 'none' });
  });

  it('VAL as save; missing id is VAL; another account’s or a deleted form is not found', async () => {
    const saved = await saveOfA();
    expectVal(await api(app, a).json(`/forms/update?id=${saved.id}`, formOfA({ success_url: 'mailto:x@example.com' })), {
      success_url: [REDIRECT_SCHEME.replace(':attribute', 'success url')],
    });
    expectVal(await api(app, a).json(`/forms/update?id=${saved.id}`, formOfA({ confirmation_sender_id: A.unverified })), {
      confirmation_sender_id: [SENDER_UNVERIFIED],
    });
    expectVal(await api(app, a).json('/forms/update', formOfA()), { id: ['The id field is required.'] });
    expectNF1(await api(app, b).json(`/forms/update?id=${saved.id}`, { ...formOfA(), contact_type_ids: [B.list], confirmation_sender_id: B.sender }));
    expectNF1(await api(app, a).json('/forms/update?id=abc', formOfA()));
    await api(app, a).delete(`/forms/delete?id=${saved.id}`);
    expectNF1(await api(app, a).json(`/forms/update?id=${saved.id}`, formOfA()));
    expect((await db('forms').where({ user_id: a.id, id: saved.id }).first('name')).name).toBe('Newsletter signup');
  });
});

describe('GET /forms/list', () => {
  it('the account’s live forms, newest first, with their public ids; paging', async () => {
    const one = await saveOfA({ name: 'L1' });
    const two = await saveOfA({ name: 'L2' });
    const gone = await saveOfA({ name: 'L3' });
    await api(app, a).delete(`/forms/delete?id=${gone.id}`);
    const res = await api(app, a).get('/forms/list');
    expectSuccess(res);
    const forms = res.body.message.forms as Array<{ id: number; public_id: string }>;
    forms.forEach((f) => expectShape(formListRecord, f));
    const ids = forms.map((f) => f.id);
    expect(ids).toEqual([...ids].sort((x, y) => y - x));
    expect(ids).toEqual(expect.arrayContaining([one.id, two.id]));
    expect(ids).not.toContain(gone.id);
    expect(forms.find((f) => f.id === two.id)!.public_id).toBe(two.public_id);
    const theirs = (await api(app, b).get('/forms/list')).body.message.forms as Array<{ id: number }>;
    expect(theirs.map((f) => f.id)).not.toContain(one.id);
    const page = await api(app, a).get('/forms/list?page=1&per_page=1');
    expect(page.body.message.forms).toHaveLength(1);
    expect(page.body.message.pagination).toEqual({ page: 1, per_page: 1, total: ids.length });
  });
});

describe('GET /forms/details', () => {
  it('the snippet: a plain form posting to the hosted URL, every value escaped, consent, honeypot, lists', async () => {
    const [{ id: evil }] = (await db('custom_fields').insert({ user_id: a.id, field_name: 'evil"><b>x', field_type: 'number' }).returning('id')) as Array<{ id: number }>;
    const saved = await saveOfA({
      contact_type_ids: [A.list, A.list2],
      fields: [{ field_name: 'email', label: '<script>alert(1)</script>' }, { field_name: 'evil"><b>x' }],
      consent_text: 'I agree & "consent" <b>now</b>',
    });
    const form = (await details(a, saved.id)).body.message.form as { html_snippet: string; hosted_url: string };
    const html = form.html_snippet;
    expect(html).toContain(`<form method="post" action="${form.hosted_url}" accept-charset="UTF-8">`);
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html).not.toContain('<script');
    expect(html).toContain(`name="custom_field[evil&#34;&#62;&#60;b&#62;x]"`);
    expect(html).toContain('type="number"');
    expect(html).toContain(`id="herald-${saved.public_id.slice(0, 16)}-${evil}"`);
    expect(html).toContain('<input type="email"');
    expect(html).toContain('name="email" required');
    expect(html).toContain('<input type="checkbox" name="consent" value="1" required> I agree &#38; &#34;consent&#34; &#60;b&#62;now&#60;/b&#62;');
    expect(html).toContain('name="website" value="" tabindex="-1" autocomplete="off"');
    expect(html).toContain(`name="contact_type_ids[]" value="${A.list}" checked> Weekly`);
    expect(html).toContain(`name="contact_type_ids[]" value="${A.list2}" checked> Offers`);
    expect(html).toContain('<button type="submit">Subscribe</button>');
    expect(html).not.toContain('altcha');
  });

  it('one list is a hidden input; proof of work adds the widget', async () => {
    const saved = await saveOfA({ captcha: 'proof_of_work' });
    const html = (await details(a, saved.id)).body.message.form.html_snippet as string;
    expect(html).toContain(`<input type="hidden" name="contact_type_ids[]" value="${A.list}">`);
    expect(html).toContain(`<altcha-widget challenge="${config.publicUrl}/subscribe/${saved.public_id}/challenge" name="altcha"></altcha-widget>`);
    expect(html).toContain(`<script type="module" src="${config.publicUrl}/app/assets/altcha.js"></script>`);
  });

  it('not found: another account’s form, a deleted one, a malformed id', async () => {
    const saved = await saveOfA();
    expectNF1(await details(b, saved.id));
    expectNF1(await api(app, a).get('/forms/details?id=0'));
    expectNF1(await api(app, a).get('/forms/details'));
    await api(app, a).delete(`/forms/delete?id=${saved.id}`);
    expectNF1(await details(a, saved.id));
  });
});

async function pendingRow(formId: number, email: string, createdAt: Date, confirmedAt: Date | null = null): Promise<void> {
  await db('pending_subscriptions').insert({
    user_id: a.id,
    form_id: formId,
    email,
    contact_type_ids: [A.list],
    consent_text: 'I agree.',
    created_at: createdAt,
    confirmed_at: confirmedAt,
  });
}

describe('DELETE /forms/delete', () => {
  it('soft-deletes the form and its unconfirmed pending subscriptions; confirmed ones and stats stay', async () => {
    const saved = await saveOfA();
    await pendingRow(saved.id, 'waiting@example.com', new Date());
    await pendingRow(saved.id, 'done@example.com', new Date(), new Date());
    await db.transaction((trx) => countFormSubmission(trx, a.id, saved.id));
    expectNF1(await api(app, b).delete(`/forms/delete?id=${saved.id}`));
    expectSuccess(await api(app, a).delete(`/forms/delete?id=${saved.id}`), 'Deleted Successfully');
    expect(await db('forms').where({ user_id: a.id, id: saved.id }).whereNotNull('deleted_at').first('id')).toBeTruthy();
    expect(await db('pending_subscriptions').where({ user_id: a.id, form_id: saved.id }).pluck('email')).toEqual(['done@example.com']);
    expect(await db('form_stats_daily').where({ user_id: a.id, form_id: saved.id }).sum('submissions as submissions').first()).toEqual({ submissions: 1 });
    expect(await loadPublicForm(db, { userId: a.id, formId: saved.id })).toBeUndefined();
    expectNF1(await api(app, a).delete(`/forms/delete?id=${saved.id}`));
    expectNF1(await api(app, a).get(`/forms/stats?id=${saved.id}`));
  });
});

describe('GET /forms/stats', () => {
  it('by UTC day: submissions, confirmations, rate and pending, every day of the range, oldest first', async () => {
    const saved = await saveOfA();
    const other = await saveOfA();
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    await db('form_stats_daily').insert([
      { user_id: a.id, form_id: saved.id, day: day(0), submissions: 4, confirmations: 1 },
      { user_id: a.id, form_id: saved.id, day: day(2), submissions: 3, confirmations: 3 },
      { user_id: a.id, form_id: saved.id, day: day(40), submissions: 9, confirmations: 9 },
      { user_id: a.id, form_id: other.id, day: day(0), submissions: 50, confirmations: 0 },
    ]);
    await pendingRow(saved.id, 'p1@example.com', new Date());
    await pendingRow(saved.id, 'p2@example.com', new Date());
    await pendingRow(saved.id, 'p3@example.com', new Date(), new Date());
    await pendingRow(other.id, 'p4@example.com', new Date());
    const res = await api(app, a).get(`/forms/stats?id=${saved.id}&days=3`);
    expectSuccess(res);
    const { stats } = expectShape(formStatsResponse, res.body.message);
    expect(stats).toEqual({
      form_id: saved.id,
      days: [
        { day: day(2), submissions: 3, confirmations: 3, confirmation_rate: 1, pending: 0 },
        { day: day(1), submissions: 0, confirmations: 0, confirmation_rate: null, pending: 0 },
        { day: day(0), submissions: 4, confirmations: 1, confirmation_rate: 0.25, pending: 2 },
      ],
      totals: { submissions: 7, confirmations: 4, confirmation_rate: 0.5714, pending: 2 },
    });
    const month = (await api(app, a).get(`/forms/stats?id=${saved.id}`)).body.message.stats;
    expect(month.days).toHaveLength(30);
    expect(month.totals.submissions).toBe(7);
    expect((await api(app, a).get(`/forms/stats?id=${saved.id}&days=366`)).body.message.stats.totals.submissions).toBe(16);
  });

  it('VAL on days; another account’s form is not found', async () => {
    const saved = await saveOfA();
    expectVal(await api(app, a).get(`/forms/stats?id=${saved.id}&days=0`), { days: ['The days must be at least 1.'] });
    expectVal(await api(app, a).get(`/forms/stats?id=${saved.id}&days=367`), { days: ['The days must not be greater than 366.'] });
    expectVal(await api(app, a).get(`/forms/stats?id=${saved.id}&days=x`), { days: ['The days must be an integer.'] });
    const res = await api(app, b).get(`/forms/stats?id=${saved.id}`);
    expect(res.body).toEqual({ status: 'failed', errors: NOT_FOUND_1 });
  });
});

describe('src/forms (what the public endpoint reads)', () => {
  it('loadPublicForm gives the form with its live lists, fields and verified sender; undefined when deleted or another account’s', async () => {
    const list = await makeContactType(db, a, 'Weekly');
    const gone = await makeContactType(db, a, 'Gone');
    const sender = await makeSender(db, a);
    const [{ id }] = (await db('forms')
      .insert({
        user_id: a.id,
        name: 'Signup',
        contact_type_ids: [list, gone],
        fields: JSON.stringify([
          { field_id: 3, required: 1, label: '' },
          { field_id: 1, required: 0, label: 'Your name' },
        ]),
        consent_text: 'I agree.',
        confirmation_subject: 'Confirm',
        confirmation_sender_id: sender,
      })
      .returning('id')) as Array<{ id: number }>;
    await db('contact_types').where({ user_id: a.id, id: gone }).update({ deleted_at: db.fn.now() });
    const form = await loadPublicForm(db, { userId: a.id, formId: id });
    expect(form).toMatchObject({
      userId: a.id,
      formId: id,
      name: 'Signup',
      lists: [{ id: list, name: expect.stringMatching(/^Weekly/) }],
      fields: [
        { fieldId: 3, name: 'email', kind: 'reserved', label: 'Email', required: true, inputName: 'email' },
        { fieldId: 1, name: 'first_name', kind: 'reserved', label: 'Your name', required: false, inputName: 'first_name' },
      ],
      doubleOptIn: true,
      consentText: 'I agree.',
      successUrl: null,
      confirmationSubject: 'Confirm',
      confirmationSenderId: sender,
      sender: { id: sender },
      captcha: 'none',
    });
    expect(readFormPublicId(await secret(db, 'tracking'), form!.id)).toEqual({ userId: a.id, formId: id });
    expect(await loadPublicForm(db, { userId: b.id, formId: id })).toBeUndefined();
    await db('forms').where({ user_id: a.id, id }).update({ deleted_at: db.fn.now() });
    expect(await loadPublicForm(db, { userId: a.id, formId: id })).toBeUndefined();
  });

  it('countFormSubmission and countFormConfirmation add to today’s UTC row', async () => {
    const list = await makeContactType(db, a, 'Stats');
    const [{ id }] = (await db('forms')
      .insert({ user_id: a.id, name: 'S', contact_type_ids: [list], fields: '[]', consent_text: 'ok', confirmation_subject: 'c' })
      .returning('id')) as Array<{ id: number }>;
    await db.transaction(async (trx) => {
      await countFormSubmission(trx, a.id, id);
      await countFormSubmission(trx, a.id, id);
      await countFormConfirmation(trx, a.id, id);
    });
    const rows = await db('form_stats_daily').where({ user_id: a.id, form_id: id }).select('day', 'slot', 'submissions', 'confirmations');
    expect(new Set(rows.map((r) => String(r.day)))).toHaveProperty('size', 1);
    expect(rows.every((r) => r.slot >= 0 && r.slot < STAT_SLOTS)).toBe(true);
    expect(await statsByDay(db, a.id, id, '2000-01-01')).toEqual([
      { day: new Date().toISOString().slice(0, 10), submissions: 2, confirmations: 1 },
    ]);
  });
});
