import type { Request, Response } from 'express';
import type { ComponentChildren } from 'preact';
import { contactRoutes } from '../../resources/contacts/contacts.router';
import { getContact } from '../../resources/contacts/contacts.service';
import { loadCustomFields, type CustomField } from '../../resources/contacts/custom-values';
import { listContactTypes } from '../../resources/contact-types/contact-types.service';
import { geographyBody } from '../../resources/geography/geography.service';
import { addressMemberships } from '../../resources/reports/contact.service';
import { unsubscriberRoutes } from '../../resources/unsubscribers/unsubscribers.router';
import { emptyForm, ErrorSummary, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { Csrf, Layout } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { findList, pathId, sendRefusal, type ListRow } from './lists';
import { posted, routeOf, withNone } from './sender-kit';

/**
 * A contact by hand: add one to a list, edit it (reserved and custom fields, or move it to
 * another list), delete it, and unsubscribe it from all email or re-subscribe it (the account's
 * global unsubscribe list). Each through the API's own route.
 */
const ADD = routeOf(contactRoutes, '/contacts/add');
const UPDATE = routeOf(contactRoutes, '/contacts/update');
const DELETE = routeOf(contactRoutes, '/contacts/delete');
const UNSUBSCRIBE = routeOf(unsubscriberRoutes, '/global-unsubscribes/save');
const RESUBSCRIBE = routeOf(unsubscriberRoutes, '/global-unsubscribes/delete');

const RESERVED: Array<{ name: string; label: string; type?: 'email'; required?: boolean }> = [
  { name: 'email', label: 'Email address', type: 'email', required: true },
  { name: 'first_name', label: 'First name' },
  { name: 'last_name', label: 'Last name' },
  { name: 'alt_email', label: 'Other email address', type: 'email' },
];
const ADDRESS: Array<{ name: string; label: string }> = [
  { name: 'address_line1', label: 'Address line 1' },
  { name: 'address_line2', label: 'Address line 2' },
  { name: 'city', label: 'City' },
  { name: 'state', label: 'State' },
  { name: 'state_province_region', label: 'State, province or region' },
  { name: 'postal_code', label: 'Postal code' },
];

/** Every country, by name (the geography API's cached answer without states: a few kilobytes). */
async function countryChoices(p: PageContext): Promise<Choice[]> {
  const { body } = await geographyBody(p.ctx, { country_id: 0 });
  const { countries } = (JSON.parse(body.toString('utf8')) as { message: { countries: Array<{ id: number; name: string }> } }).message;
  return withNone('Choose a country', [...countries].sort((a, b) => a.name.localeCompare(b.name, 'en')).map((c) => ({ value: String(c.id), label: c.name })));
}

const CUSTOM_HINT: Record<CustomField['field_type'], string> = {
  text: 'Text',
  number: 'A number',
  'datetime-local': 'A date, YYYY-MM-DD, with a time if you like: YYYY-MM-DD HH:MM',
};

interface FormContext {
  p: PageContext;
  action: string;
  title: string;
  submit: string;
  state: FormState;
  /** Editing: the lists it may move to; adding: the list it goes on (a hidden field). */
  lists?: ListRow[];
  listId?: number;
  back: string;
  extra?: ComponentChildren;
}

async function sendForm(res: Response, status: number, f: FormContext): Promise<void> {
  const [countries, custom] = await Promise.all([countryChoices(f.p), loadCustomFields(f.p.ctx)]);
  const names = [...(f.lists ? ['contact_type_id'] : []), ...RESERVED.map((r) => r.name), 'country', ...ADDRESS.map((a) => a.name), ...custom.map((c) => c.field_name)];
  sendPage(
    res,
    status,
    <Layout title={f.title} csrf={f.p.session.csrf} active="contacts" styles={['audience.css']}>
      <h1>{f.title}</h1>
      <form method="post" action={f.action} class="form" novalidate>
        <Csrf token={f.p.session.csrf} />
        <ErrorSummary state={f.state} fields={names} />
        {f.lists ? (
          <Field state={f.state} name="contact_type_id" label="List" type="select" required choices={f.lists.map((l) => ({ value: String(l.id), label: l.name }))} />
        ) : (
          <input type="hidden" name="contact_type_id" value={String(f.listId)} />
        )}
        {RESERVED.map((r) => (
          <Field state={f.state} name={r.name} label={r.label} type={r.type} required={r.required} attrs={{ maxlength: 255, autocomplete: 'off' }} />
        ))}
        <Field state={f.state} name="country" label="Country" type="select" required choices={countries} />
        <fieldset>
          <legend>Postal address</legend>
          {ADDRESS.map((a) => (
            <Field state={f.state} name={a.name} label={a.label} attrs={{ maxlength: 255, autocomplete: 'off' }} />
          ))}
        </fieldset>
        {custom.length ? (
          <fieldset>
            <legend>Custom fields</legend>
            {custom.map((c) => (
              <Field state={f.state} name={c.field_name} label={c.field_name} hint={CUSTOM_HINT[c.field_type]} attrs={{ inputmode: c.field_type === 'number' ? 'decimal' : undefined, autocomplete: 'off' }} />
            ))}
          </fieldset>
        ) : null}
        <div class="actions">
          <button type="submit">{f.submit}</button>
          <a href={f.back}>Cancel</a>
        </div>
      </form>
      {f.extra}
    </Layout>,
  );
}

export async function newContactPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  await sendForm(res, 200, newContactForm(p, list, emptyForm()));
}

const newContactForm = (p: PageContext, list: ListRow, state: FormState): FormContext => ({
  p,
  action: `/app/lists/${list.id}/contacts/new`,
  title: `Add a contact to ${list.name}`,
  submit: 'Add the contact',
  state,
  listId: list.id,
  back: `/app/lists/${list.id}`,
});

/** POST /contacts/add into the list of the page's address (a contact_type_id posted otherwise is not read). */
export async function addContactAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await findList(p, pathId(req.params.id));
  const body = { ...posted(req), contact_type_id: list.id };
  const done = await submitRoute(ADD, p, req, res, { body });
  if (!done.ok) {
    await sendForm(res, done.status, newContactForm(p, list, { values: body, errors: done.errors }));
    return;
  }
  res.redirect(303, `/app/lists/${list.id}?done=added`);
}

/** The contact as the form shows it: the detail record's fields, custom values by field name. */
function contactValues(contact: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = { ...contact };
  const custom = (contact.custom_field ?? {}) as Record<string, { field_name: string; field_value: string | null }>;
  for (const v of Object.values(custom)) values[v.field_name] = v.field_value ?? '';
  delete values.custom_field;
  return values;
}

async function editForm(p: PageContext, id: number, email: string, state: FormState): Promise<FormContext> {
  const lists = (await listContactTypes(p.ctx)).rows as unknown as ListRow[];
  return {
    p,
    action: `/app/contacts/${id}/edit`,
    title: `Edit ${email}`,
    submit: 'Save the contact',
    state,
    lists,
    back: `/app/contacts/${id}`,
    extra: (
      <section class="card danger-zone" aria-labelledby="delete-contact-h">
        <h2 id="delete-contact-h">Delete this contact</h2>
        <p>It leaves its list, its segments and any send not made yet. Its history stays in the reports.</p>
        <form method="post" action={`/app/contacts/${id}/delete`}>
          <Csrf token={p.session.csrf} />
          <button type="submit" class="danger" aria-label={`Delete this contact: ${email}`}>
            Delete this contact
          </button>
        </form>
      </section>
    ),
  };
}

export async function editContactPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = pathId(req.params.id);
  const contact = (await getContact(p.ctx, id)) as Record<string, unknown> & { email: string };
  await sendForm(res, 200, await editForm(p, id, contact.email, emptyForm(contactValues(contact))));
}

/** POST /contacts/update: custom fields sent empty are cleared, as the API does for a field sent blank. */
export async function editContactAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = pathId(req.params.id);
  const contact = (await getContact(p.ctx, id)) as Record<string, unknown> & { email: string };
  const body = posted(req);
  const done = await submitRoute(UPDATE, p, req, res, { query: { contact_id: id }, body });
  if (!done.ok) {
    await sendForm(res, done.status, await editForm(p, id, contact.email, { values: body, errors: done.errors }));
    return;
  }
  res.redirect(303, `/app/contacts/${id}?done=saved`);
}

export async function deleteContactAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = pathId(req.params.id);
  const contact = (await getContact(p.ctx, id)) as Record<string, unknown> & { contact_type_id: number };
  const done = await submitRoute(DELETE, p, req, res, { query: { contact_id: id } });
  if (!done.ok) {
    refused(res, p, id, done.status, done.errors);
    return;
  }
  res.redirect(303, `/app/lists/${contact.contact_type_id}?done=contact-deleted`);
}

const refused = (res: Response, p: PageContext, id: number, status: number, errors: Record<string, string[]>) =>
  sendRefusal(res, p, status, 'That was refused', errors, { href: `/app/contacts/${id}`, label: 'Back to the contact' });

/** POST /global-unsubscribes/save with the contact's address: no email goes to it from any send or automation. */
export async function unsubscribeAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = pathId(req.params.id);
  const contact = (await getContact(p.ctx, id)) as Record<string, unknown> & { email: string };
  const done = await submitRoute(UNSUBSCRIBE, p, req, res, { body: { email_address: contact.email } });
  if (!done.ok) {
    refused(res, p, id, done.status, done.errors);
    return;
  }
  res.redirect(303, `/app/contacts/${id}?done=unsubscribed`);
}

/** DELETE /global-unsubscribes/delete of the address's entry; an address not on the list has nothing to lift. */
export async function resubscribeAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = pathId(req.params.id);
  const contact = (await getContact(p.ctx, id)) as Record<string, unknown> & { email: string };
  const { global_unsubscribe: entry } = await addressMemberships(p.ctx, contact.email);
  if (entry) {
    const done = await submitRoute(RESUBSCRIBE, p, req, res, { query: { id: entry.id } });
    if (!done.ok) {
      refused(res, p, id, done.status, done.errors);
      return;
    }
  }
  res.redirect(303, `/app/contacts/${id}?done=resubscribed`);
}
