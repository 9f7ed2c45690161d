import { allowed, guarded } from '../permissions';
import type { Request, Response } from 'express';
import { defaultLabel } from '../../forms/forms';
import type { FieldErrors } from '../../http/errors';
import { formRoutes } from '../../resources/forms/forms.router';
import type { FormRecord, FormStats } from '../../resources/forms/forms.schemas';
import { findForm, formChoices, formStats, type FormChoices } from '../../resources/forms/forms.service';
import { Section, Table } from '../components';
import { emptyForm, errorsFor, Field, submitRoute, type FormState } from '../form-kit';
import { count, percent, when } from '../format';
import { Csrf, Layout } from '../layout';
import { page, sendPage, type DashboardKit, type PageContext } from '../respond';
import { Flash, FormPage, posted, Refusal, routeOf, withNone } from './sender-kit';

/**
 * Signup forms (issue 35): the list (GET /forms/list), a form to create or change one
 * (POST /forms/save, /forms/update through `submitRoute`: the API's validation and words), a
 * page per form with the three ways to use it (hosted page, HTML snippet to copy, JSON
 * endpoint) and its statistics by day (GET /forms/stats), and deleting one after a confirmation.
 */
const LIST = routeOf(formRoutes, '/forms/list');
const SAVE = routeOf(formRoutes, '/forms/save');
const UPDATE = routeOf(formRoutes, '/forms/update');
const DELETE = routeOf(formRoutes, '/forms/delete');

const FIELDS = ['name', 'contact_type_ids', 'fields', 'consent_text', 'double_opt_in', 'confirmation_sender_id', 'confirmation_subject', 'success_url', 'confirm_url', 'captcha'];

interface Listed {
  id: number;
  name: string;
  contact_type_ids: number[];
  double_opt_in: 0 | 1;
  captcha: string;
  updated_at: string;
}

interface ChosenField {
  field_name: string;
  required?: unknown;
  label?: unknown;
}

const formId = (req: Request) => (/^\d{1,9}$/.test(String(req.params.id)) ? Number(req.params.id) : 0);

export async function formsPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = await submitRoute(LIST, p, req, res, {});
  const forms = list.ok ? (list.message as { forms: Listed[] }).forms : [];
  sendPage(
    res,
    200,
    <Layout title="Forms" csrf={p.session.csrf} active="forms">
      <h1>Signup forms</h1>
      <Flash req={req} texts={{ added: 'Form saved.', updated: 'Form saved.', deleted: 'Form deleted.' }} />
      {allowed(p, 'audience:manage') ? (
        <p>
          <a class="button" href="/app/forms/new">
            New form
          </a>
        </p>
      ) : null}
      <Section title="Your forms" id="forms">
        <Table<Listed>
          name="forms"
          caption="Your signup forms, newest first"
          rows={forms}
          empty="No signup forms yet."
          columns={[
            { label: 'Name', cell: (f) => <a href={`/app/forms/${f.id}`}>{f.name}</a> },
            { label: 'Opt-in', cell: (f) => (f.double_opt_in ? 'double' : 'single') },
            { label: 'Lists', numeric: true, cell: (f) => count(f.contact_type_ids.length) },
            { label: 'Saved', cell: (f) => <time dateTime={f.updated_at}>{when(f.updated_at, p.tz)}</time> },
            {
              label: 'Actions',
              cell: (f) =>
                !allowed(p, 'audience:manage') ? (
                  '–'
                ) : (
                  <span class="row-actions">
                    <a href={`/app/forms/${f.id}/edit`} aria-label={`Edit: ${f.name}`}>
                      Edit
                    </a>
                    <a href={`/app/forms/${f.id}/delete`} aria-label={`Delete: ${f.name}`}>
                      Delete
                    </a>
                  </span>
                ),
            },
          ]}
        />
      </Section>
    </Layout>,
  );
}

/** The posted form as the API takes it: `fields[i][…]` rows whose "show" box is ticked, `contact_type_ids[]` as a list. */
function apiBody(req: Request): Record<string, unknown> {
  const values = posted(req);
  const rows = new Map<number, Record<string, unknown>>();
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    const m = /^fields\[(\d{1,3})\]\[(field_name|required|label)\]$/.exec(key);
    if (m) {
      const row = rows.get(Number(m[1])) ?? {};
      row[m[2]] = value;
      rows.set(Number(m[1]), row);
    } else if (key === 'contact_type_ids[]' || key === 'contact_type_ids') {
      body.contact_type_ids = Array.isArray(value) ? value : [value];
    } else {
      body[key] = value;
    }
  }
  body.fields = [...rows.entries()]
    .sort(([x], [y]) => x - y)
    .map(([, row]) => row)
    .filter((row) => typeof row.field_name === 'string' && row.field_name !== '')
    .map((row) => ({ field_name: row.field_name, ...(row.required === '1' ? { required: 1 } : {}), ...(row.label ? { label: row.label } : {}) }));
  return body;
}

/** The fields table: the form's fields first, in its order, then every other field it could show. */
function FieldRows({ state, choices }: { state: FormState; choices: FormChoices }) {
  const chosen = (Array.isArray(state.values.fields) ? state.values.fields : []) as ChosenField[];
  const byName = new Map(chosen.map((f) => [f.field_name.toLowerCase(), f]));
  const rest = choices.fields.filter((f) => !byName.has(f.name.toLowerCase()));
  const rows = [
    ...chosen.map((f) => ({ name: f.field_name, on: true, required: Number(f.required) === 1, label: typeof f.label === 'string' ? f.label : '' })),
    ...rest.map((f) => ({ name: f.name, on: f.name === 'email', required: f.name === 'email', label: '' })),
  ];
  const messages = errorsFor(state, 'fields');
  return (
    <fieldset id="field-fields" class={messages.length ? 'invalid' : undefined}>
      <legend>Fields shown</legend>
      <p class="hint">Tick the fields the form shows, in this order. Email is always shown and required.</p>
      {messages.length ? (
        <ul class="field-errors">
          {messages.map((m) => (
            <li>{m}</li>
          ))}
        </ul>
      ) : null}
      <table class="data" data-table="form-fields">
        <thead>
          <tr>
            <th scope="col">Field</th>
            <th scope="col">Show</th>
            <th scope="col">Required</th>
            <th scope="col">Label</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => {
            const email = r.name === 'email';
            return (
              <tr data-field={r.name}>
                <th scope="row">{r.name}</th>
                <td data-label="Show">
                  {email ? <input type="hidden" name={`fields[${i}][field_name]`} value="email" /> : null}
                  <input
                    type="checkbox"
                    name={email ? undefined : `fields[${i}][field_name]`}
                    value={r.name}
                    checked={r.on || email}
                    disabled={email}
                    aria-label={`Show ${r.name}`}
                  />
                </td>
                <td data-label="Required">
                  {email ? <input type="hidden" name={`fields[${i}][required]`} value="1" /> : null}
                  <input
                    type="checkbox"
                    name={email ? undefined : `fields[${i}][required]`}
                    value="1"
                    checked={r.required || email}
                    disabled={email}
                    aria-label={`${r.name} is required`}
                  />
                </td>
                <td data-label="Label">
                  <input type="text" name={`fields[${i}][label]`} value={r.label} placeholder={defaultLabel(r.name)} aria-label={`Label of ${r.name}`} maxLength={255} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </fieldset>
  );
}

async function renderForm(res: Response, p: PageContext, status: number, opts: { title: string; action: string; submit: string; state: FormState }): Promise<void> {
  const { state } = opts;
  const choices = await formChoices(p.ctx);
  sendPage(
    res,
    status,
    <FormPage
      heading={opts.title}
      active="forms"
      csrf={p.session.csrf}
      back={{ href: '/app/forms', label: 'Forms' }}
      state={state}
      fields={FIELDS}
      action={opts.action}
      submit={opts.submit}
    >
      <Field state={state} name="name" label="Name" hint="Shown as the heading of the hosted page." required />
      <Field
        state={state}
        name="contact_type_ids"
        label="Lists"
        type="multiselect"
        hint="The lists people join. With several, each person chooses."
        required
        choices={choices.lists.map((l) => ({ value: String(l.id), label: l.name }))}
      />
      <FieldRows state={state} choices={choices} />
      <Field state={state} name="consent_text" label="Consent text" type="textarea" rows={3} hint="Shown beside a checkbox people must tick; kept with each consent record." required />
      <Field
        state={state}
        name="double_opt_in"
        label="Opt-in"
        type="select"
        choices={[
          { value: '1', label: 'Double opt-in: confirm from a mailed link (recommended)' },
          { value: '0', label: 'Single opt-in: added at once' },
        ]}
      />
      <Field
        state={state}
        name="confirmation_sender_id"
        label="Confirmation mail from"
        type="select"
        hint="A verified sender; needed for double opt-in."
        choices={withNone('None', choices.senders.map((s) => ({ value: String(s.id), label: s.label })))}
      />
      <Field state={state} name="confirmation_subject" label="Confirmation subject" hint="Default: “Please confirm your subscription”." />
      <Field state={state} name="success_url" label="After submitting, go to" type="url" hint="An http or https address; default: Herald’s own page." />
      <Field state={state} name="confirm_url" label="After confirming, go to" type="url" hint="An http or https address; default: Herald’s own page." />
      <Field
        state={state}
        name="captcha"
        label="Bot check"
        type="select"
        choices={[
          { value: 'none', label: 'None (the hidden honeypot field only)' },
          { value: 'proof_of_work', label: 'Proof of work (self-hosted, no third party, no cookie)' },
        ]}
      />
    </FormPage>,
  );
}

const NEW = { title: 'New signup form', action: '/app/forms/new', submit: 'Save the form' };
const editing = (f: { id: number; name: string }) => ({ title: `Edit form: ${f.name}`, action: `/app/forms/${f.id}/edit`, submit: 'Save the form' });

/** A refused form shows again what was posted: the lists as chosen, the ticked fields. */
const shownAgain = (body: Record<string, unknown>, errors: FieldErrors): FormState => ({ values: body, errors });

export const newFormPage = (_req: Request, res: Response, p: PageContext) =>
  renderForm(res, p, 200, { ...NEW, state: emptyForm({ double_opt_in: '1', captcha: 'none', fields: [{ field_name: 'email', required: 1 }] }) });

export async function saveFormAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const body = apiBody(req);
  const done = await submitRoute(SAVE, p, req, res, { body });
  if (done.ok) res.redirect(303, `/app/forms/${(done.message as { id: number }).id}?done=added`);
  else await renderForm(res, p, done.status, { ...NEW, state: shownAgain(body, done.errors) });
}

function storedValues(f: FormRecord): Record<string, unknown> {
  return {
    ...f,
    contact_type_ids: f.contact_type_ids.map(String),
    fields: f.fields.map((x) => ({ field_name: x.field_name, required: x.required, label: x.label === defaultLabel(x.field_name) ? '' : x.label })),
    double_opt_in: String(f.double_opt_in),
    confirmation_sender_id: f.confirmation_sender_id === null ? '' : String(f.confirmation_sender_id),
  };
}

export async function editFormPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const f = await findForm(p.ctx, p.deps.config, formId(req));
  await renderForm(res, p, 200, { ...editing(f), state: emptyForm(storedValues(f)) });
}

export async function updateFormAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const f = await findForm(p.ctx, p.deps.config, formId(req));
  const body = apiBody(req);
  const done = await submitRoute(UPDATE, p, req, res, { body, query: { id: f.id } });
  if (done.ok) res.redirect(303, `/app/forms/${f.id}?done=updated`);
  else await renderForm(res, p, done.status, { ...editing(f), state: shownAgain(body, done.errors) });
}

type Day = FormStats['days'][number];

export async function formPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const id = formId(req);
  const [f, stats] = await Promise.all([findForm(p.ctx, p.deps.config, id), formStats(p.ctx, id, 30)]);
  const days = [...stats.days].reverse();
  sendPage(
    res,
    200,
    <Layout title={`Form ${f.name}`} csrf={p.session.csrf} active="forms" styles={['settings.css']}>
      <p>
        <a href="/app/forms">Forms</a>
      </p>
      <h1>{f.name}</h1>
      <Flash req={req} texts={{ added: 'Form saved.', updated: 'Form saved.' }} />
      <p class="muted">
        {f.double_opt_in ? 'Double opt-in' : 'Single opt-in'} · {f.captcha === 'proof_of_work' ? 'proof of work' : 'honeypot only'}
        {allowed(p, 'audience:manage') ? (
          <>
            {' · '}
            <a href={`/app/forms/${f.id}/edit`}>Edit</a> · <a href={`/app/forms/${f.id}/delete`}>Delete</a>
          </>
        ) : null}
      </p>
      <Section title="Use it" id="use">
        <h3>Hosted page</h3>
        <p>
          <a class="url" href={f.hosted_url} data-hosted-url>
            {f.hosted_url}
          </a>
        </p>
        <h3>
          <label for="form-snippet">HTML snippet</label>
        </h3>
        <p class="hint">Paste it into any page: a plain form that posts to the hosted page, so it works without script.</p>
        <textarea id="form-snippet" class="snippet" readOnly rows={Math.min(24, f.html_snippet.split('\n').length)} spellcheck={false}>
          {f.html_snippet}
        </textarea>
        <h3>JSON endpoint</h3>
        <p>
          <code class="url">POST {f.json_url}</code> with <code>Accept: application/json</code>, for a site with its own front end.
        </p>
      </Section>
      <Section title="Last 30 days" id="stats">
        <p class="muted">
          {count(stats.totals.submissions)} submissions · {count(stats.totals.confirmations)} confirmations · confirmation rate{' '}
          {percent(stats.totals.confirmation_rate)} · {count(stats.totals.pending)} pending
        </p>
        <Table<Day>
          name="form-stats"
          caption="By day (UTC), newest first"
          rows={days}
          empty="No days."
          columns={[
            { label: 'Day', cell: (d) => d.day },
            { label: 'Submissions', numeric: true, cell: (d) => count(d.submissions) },
            { label: 'Confirmations', numeric: true, cell: (d) => count(d.confirmations) },
            { label: 'Rate', numeric: true, cell: (d) => percent(d.confirmation_rate) },
            { label: 'Pending', numeric: true, cell: (d) => count(d.pending) },
          ]}
        />
      </Section>
    </Layout>,
  );
}

function ConfirmDelete({ p, form, errors }: { p: PageContext; form: { id: number; name: string }; errors?: FieldErrors }) {
  return (
    <Layout title={`Delete ${form.name}`} csrf={p.session.csrf} active="forms">
      <h1>Delete a signup form</h1>
      <Refusal errors={errors} />
      <p>
        Delete the form <strong>{form.name}</strong>?
      </p>
      <p class="muted">Its hosted page and snippet stop working, and its unconfirmed subscriptions are dropped. Its statistics and consent records stay.</p>
      <form method="post" action={`/app/forms/${form.id}/delete`} class="actions">
        <Csrf token={p.session.csrf} />
        <button type="submit" class="danger">
          Delete the form
        </button>
        <a class="button secondary" href={`/app/forms/${form.id}`}>
          Keep it
        </a>
      </form>
    </Layout>
  );
}

export async function confirmDeletePage(req: Request, res: Response, p: PageContext): Promise<void> {
  const f = await findForm(p.ctx, p.deps.config, formId(req));
  sendPage(res, 200, <ConfirmDelete p={p} form={f} />);
}

export async function deleteFormAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const f = await findForm(p.ctx, p.deps.config, formId(req));
  const done = await submitRoute(DELETE, p, req, res, { query: { id: f.id } });
  if (done.ok) res.redirect(303, '/app/forms?done=deleted');
  else sendPage(res, done.status, <ConfirmDelete p={p} form={f} errors={done.errors} />);
}

export function mountFormPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  const g = guarded(r, signedIn);
  g.get('/forms', 'read', page(formsPage, 'forms'));
  g.get('/forms/new', 'audience:manage', page(newFormPage, 'forms'));
  g.post('/forms/new', 'audience:manage', form, requireCsrf, page(saveFormAction, 'forms'));
  g.get('/forms/:id', 'read', page(formPage, 'forms'));
  g.get('/forms/:id/edit', 'audience:manage', page(editFormPage, 'forms'));
  g.post('/forms/:id/edit', 'audience:manage', form, requireCsrf, page(updateFormAction, 'forms'));
  g.get('/forms/:id/delete', 'audience:manage', page(confirmDeletePage, 'forms'));
  g.post('/forms/:id/delete', 'audience:manage', form, requireCsrf, page(deleteFormAction, 'forms'));
}
