import type { Request, Response } from 'express';
import { OPERATORS, type FieldType } from '../../contacts/segment-rules';
import { loadRuleFields } from '../../contacts/segments.sql';
import { AppError, type FieldErrors } from '../../http/errors';
import { normalizeInput } from '../../http/form';
import { validate } from '../../http/validate';
import { listContactTypes } from '../../resources/contact-types/contact-types.service';
import { segmentRoutes } from '../../resources/segments/segments.router';
import { segmentBody } from '../../resources/segments/segments.schemas';
import { countSegmentRules, listSegments } from '../../resources/segments/segments.service';
import { Table } from '../components';
import { emptyForm, ErrorSummary, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { count } from '../format';
import { Csrf, Layout } from '../layout';
import { errorLines, pageContext, sendPage, type PageContext } from '../respond';
import { exportAction, FieldMessages, pageOf, Pager, pathId, PER_PAGE, sendRefusal, type ListRow } from './lists';
import { Flash, routeOf } from './sender-kit';
import { allowed } from '../permissions';

/**
 * Segments: a rule builder whose fields are the account's (reserved and custom, by id) and whose
 * operators are those Herald knows for each field's type (src/contacts/segment-rules.ts), the
 * live count of the rules being edited (assets/dashboard/audience.js asks GET
 * /app/segments/count; without script the count shows once saved), the members a page at a
 * time, export and delete. Saving runs POST /segment/save or /segment/update.
 */
const SAVE = routeOf(segmentRoutes, '/segment/save');
const UPDATE = routeOf(segmentRoutes, '/segment/update');
const DETAILS = routeOf(segmentRoutes, '/segment/details');
const DELETE = routeOf(segmentRoutes, '/segment/delete');
const MEMBERS = routeOf(segmentRoutes, '/segment/email/list');
/** The API takes at most 50 rules. */
const MAX_RULES = 50;

const TYPE_WORDS: Record<FieldType, string> = { text: 'text', number: 'number', 'datetime-local': 'date' };

interface SegmentRecord {
  id: number;
  segment_name: string;
  contact_type_id: number;
  select_field: string[];
  select_operator: string[];
  value: string[];
  query_type: string | null;
  segment_emails_count: number;
}

interface Rules {
  /** The API's input: the rules with a field chosen, in order. */
  body: Record<string, unknown>;
  /** What the form shows again: the same rules under their new positions. */
  values: Record<string, unknown>;
  rows: number;
}

/**
 * The form's rules (`select_field.0`, `select_operator.0`, `value.0`, …) as the API's parallel
 * arrays; a row without a field is no rule and is left out (that is how a rule is removed).
 */
function readRules(raw: Record<string, unknown>): Rules {
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const body: Record<string, unknown> = { segment_name: raw.segment_name, contact_type_id: raw.contact_type_id, query_type: raw.query_type };
  const values: Record<string, unknown> = { ...body };
  const fields: string[] = [];
  const operators: string[] = [];
  const operands: string[] = [];
  for (let i = 0; i < MAX_RULES; i += 1) {
    const field = str(raw[`select_field.${i}`]).trim();
    if (!field) continue;
    const at = fields.length;
    fields.push(field);
    operators.push(str(raw[`select_operator.${i}`]));
    operands.push(str(raw[`value.${i}`]));
    values[`select_field.${at}`] = field;
    values[`select_operator.${at}`] = operators[at];
    values[`value.${at}`] = operands[at];
  }
  Object.assign(body, { select_field: fields, select_operator: operators, value: operands });
  return { body, values, rows: fields.length };
}

function storedValues(s: SegmentRecord): Record<string, unknown> {
  const values: Record<string, unknown> = { segment_name: s.segment_name, contact_type_id: String(s.contact_type_id), query_type: s.query_type ?? 'and' };
  s.select_field.forEach((f, i) => {
    values[`select_field.${i}`] = f;
    values[`select_operator.${i}`] = s.select_operator[i] ?? '';
    values[`value.${i}`] = s.value[i] ?? '';
  });
  return values;
}

interface Builder {
  fields: Array<Choice & { type: FieldType }>;
  /** Each operator once, with the field types it applies to (the script offers only those). */
  operators: Array<{ value: string; types: FieldType[] }>;
  lists: ListRow[];
}

async function builder(p: PageContext): Promise<Builder> {
  const [fields, lists] = await Promise.all([loadRuleFields(p.ctx), listContactTypes(p.ctx)]);
  const sorted = [...fields.values()].sort((a, b) => b.is_reserved - a.is_reserved || a.id - b.id);
  const operators = new Map<string, FieldType[]>();
  for (const [type, ops] of Object.entries(OPERATORS) as Array<[FieldType, readonly string[]]>) for (const op of ops) operators.set(op, [...(operators.get(op) ?? []), type]);
  return {
    fields: sorted.map((f) => ({ value: String(f.id), label: `${f.field_name} (${TYPE_WORDS[f.field_type]}${f.is_reserved ? '' : ', custom'})`, type: f.field_type })),
    operators: [...operators].map(([value, types]) => ({ value, types })),
    lists: lists.rows as unknown as ListRow[],
  };
}

function RuleRow({ i, state, b }: { i: number; state: FormState; b: Builder }) {
  const chosen = String(state.values[`select_operator.${i}`] ?? '');
  return (
    <fieldset class="rule" data-rule={String(i)}>
      <legend>Rule {i + 1}</legend>
      <Field state={state} name={`select_field.${i}`} label="Field" type="select" choices={[{ value: '', label: 'No rule (left out)' }, ...b.fields]} attrs={{ 'data-rule-field': '', 'data-types': JSON.stringify(Object.fromEntries(b.fields.map((f) => [f.value, f.type]))) }} />
      <div class={`field${state.errors[`select_operator.${i}`] ? ' invalid' : ''}`}>
        <label for={`field-select_operator-${i}`}>Operator</label>
        <select
          id={`field-select_operator-${i}`}
          name={`select_operator.${i}`}
          data-rule-operator=""
          aria-invalid={state.errors[`select_operator.${i}`] ? 'true' : undefined}
          aria-describedby={state.errors[`select_operator.${i}`] ? `field-select_operator-${i}-errors` : undefined}
        >
          {b.operators.map((o) => (
            <option value={o.value} selected={o.value === chosen} data-types={o.types.join(' ')}>
              {o.value}
            </option>
          ))}
        </select>
        <FieldMessages id={`field-select_operator-${i}`} messages={state.errors[`select_operator.${i}`] ?? []} />
      </div>
      <Field state={state} name={`value.${i}`} label="Value" hint="For “is between”: low,high. Dates as YYYY-MM-DD." attrs={{ maxlength: 1000, autocomplete: 'off' }} />
    </fieldset>
  );
}

interface FormPage {
  title: string;
  action: string;
  state: FormState;
  rows: number;
  saved?: SegmentRecord;
}

async function sendBuilder(req: Request, res: Response, p: PageContext, status: number, f: FormPage): Promise<void> {
  const b = await builder(p);
  const rows = Math.min(MAX_RULES, Math.max(1, f.rows));
  const names = ['segment_name', 'contact_type_id', 'query_type', 'select_field', 'select_operator', 'value'];
  const saved = f.saved;
  const manage = allowed(p, 'audience:manage');
  sendPage(
    res,
    status,
    <Layout title={f.title} csrf={p.session.csrf} active="contacts" styles={['audience.css']} scripts={['audience.js']}>
      <p class="crumbs">
        <a href="/app/contacts">Contacts</a> › segment
      </p>
      <h1>{f.title}</h1>
      <Flash req={req} texts={{ saved: 'The segment was saved.' }} />
      <form method="post" action={f.action} class="form" id="segment-form" novalidate>
        <Csrf token={p.session.csrf} />
        {saved ? <input type="hidden" name="segment_id" value={String(saved.id)} /> : null}
        <ErrorSummary state={f.state} fields={names} />
        <Field state={f.state} name="segment_name" label="Name" required attrs={{ maxlength: 255, autocomplete: 'off' }} />
        <Field state={f.state} name="contact_type_id" label="Of the list" type="select" required choices={b.lists.map((l) => ({ value: String(l.id), label: l.name }))} />
        <Field
          state={f.state}
          name="query_type"
          label="Contacts match when"
          type="select"
          choices={[
            { value: 'and', label: 'every rule matches' },
            { value: 'or', label: 'any rule matches' },
          ]}
        />
        <div class="rules">
          {Array.from({ length: rows }, (_, i) => (
            <RuleRow i={i} state={f.state} b={b} />
          ))}
        </div>
        <p id="segment-count" class="count" role="status" aria-live="polite" data-count-url="/app/segments/count">
          {saved ? `${count(saved.segment_emails_count)} contact${saved.segment_emails_count === 1 ? '' : 's'} match the saved rules.` : 'The count shows once the segment is saved.'}
        </p>
        <div class="actions">
          {manage ? <button type="submit">Save the segment</button> : null}
          {manage && rows < MAX_RULES ? (
            <button type="submit" name="more" value="1" class="secondary">
              Add a rule
            </button>
          ) : null}
          {saved ? <a href={`/app/segments/${saved.id}/members`}>Open its members</a> : null}
          {saved && manage ? (
            <a href={`/app/segments/${saved.id}/export.csv`} download>
              Export CSV
            </a>
          ) : null}
        </div>
      </form>
      {saved && manage ? (
        <section class="card danger-zone" aria-labelledby="delete-segment-h">
          <h2 id="delete-segment-h">Delete this segment</h2>
          <p>Its contacts stay on their list; only the segment goes.</p>
          <form method="post" action={`/app/segments/${saved.id}/delete`}>
            <Csrf token={p.session.csrf} />
            <button type="submit" class="danger" aria-label={`Delete this segment: ${saved.segment_name}`}>
              Delete this segment
            </button>
          </form>
        </section>
      ) : null}
    </Layout>,
  );
}

export async function newSegmentPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const list = typeof req.query.contact_type_id === 'string' ? req.query.contact_type_id : '';
  await sendBuilder(req, res, p, 200, { title: 'New segment', action: '/app/segments/new', state: emptyForm({ contact_type_id: list, query_type: 'and' }), rows: 1 });
}

/** Saved through POST /segment/save; "Add a rule" shows the form again with one more row, saving nothing. */
export async function createSegmentAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const raw = (req.body ?? {}) as Record<string, unknown>;
  const rules = readRules(raw);
  const form = { title: 'New segment', action: '/app/segments/new' };
  if (raw.more) {
    await sendBuilder(req, res, p, 200, { ...form, state: emptyForm(rules.values), rows: rules.rows + 1 });
    return;
  }
  const done = await submitRoute(SAVE, p, req, res, { body: rules.body });
  if (!done.ok) {
    await sendBuilder(req, res, p, done.status, { ...form, state: { values: rules.values, errors: done.errors }, rows: rules.rows });
    return;
  }
  // The route answers without the id: the newest segment of that name over that list is the one just saved.
  const newest = (await listSegments(p.ctx, { page: 1, perPage: 10 })).rows as unknown as SegmentRecord[];
  const made = newest.find((s) => s.segment_name === String(rules.body.segment_name ?? '').trim() && String(s.contact_type_id) === String(rules.body.contact_type_id));
  res.redirect(303, made ? `/app/segments/${made.id}?done=saved` : '/app/contacts#segments');
}

async function loadSegment(req: Request, res: Response, p: PageContext): Promise<SegmentRecord> {
  const found = await submitRoute(DETAILS, p, req, res, { query: { segment_id: pathId(req.params.id) } });
  if (!found.ok) throw new AppError(found.status, found.errors);
  return (found.message as { segment: SegmentRecord }).segment;
}

export async function segmentPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const saved = await loadSegment(req, res, p);
  await sendBuilder(req, res, p, 200, { title: saved.segment_name, action: `/app/segments/${saved.id}`, state: emptyForm(storedValues(saved)), rows: saved.select_field.length, saved });
}

export async function updateSegmentAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const saved = await loadSegment(req, res, p);
  const raw = (req.body ?? {}) as Record<string, unknown>;
  const rules = readRules(raw);
  const form = { title: saved.segment_name, action: `/app/segments/${saved.id}`, saved };
  if (raw.more) {
    await sendBuilder(req, res, p, 200, { ...form, state: emptyForm(rules.values), rows: rules.rows + 1 });
    return;
  }
  const done = await submitRoute(UPDATE, p, req, res, { query: { segment_id: saved.id }, body: rules.body });
  if (!done.ok) {
    await sendBuilder(req, res, p, done.status, { ...form, state: { values: rules.values, errors: done.errors }, rows: rules.rows });
    return;
  }
  res.redirect(303, `/app/segments/${saved.id}?done=saved`);
}

export async function deleteSegmentAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const saved = await loadSegment(req, res, p);
  const done = await submitRoute(DELETE, p, req, res, { query: { segment_id: saved.id } });
  if (!done.ok) {
    sendRefusal(res, p, done.status, 'The segment was not deleted', done.errors, { href: `/app/segments/${saved.id}`, label: 'Back to the segment' });
    return;
  }
  res.redirect(303, '/app/contacts?done=segment-deleted');
}

/**
 * GET /app/segments/count (the builder's script, with the form's fields): how many contacts the
 * rules as they stand would match, checked by the API's own schema and the service's checks
 * (countSegmentRules). JSON: `{count}`, or the refusal's messages by field.
 */
export async function countAction(req: Request, res: Response): Promise<void> {
  const p = pageContext(res);
  res.set('Cache-Control', 'no-store');
  const raw = req.query as Record<string, unknown>;
  try {
    const input = validate(segmentBody, normalizeInput(readRules(raw).body));
    const segmentId = raw.segment_id === undefined ? undefined : pathId(raw.segment_id);
    res.json({ status: 'success', message: { count: await countSegmentRules(p.ctx, input, segmentId) } });
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    res.status(err.status).json({ status: 'failed', errors: typeof err.errors === 'string' ? { _form: [err.errors] } : (err.errors as FieldErrors), lines: errorLines(err.errors) });
  }
}

interface Member {
  id: number;
  contact_id: number | null;
  email: string;
  fullname: string;
}

/** The members a page at a time (GET /segment/email/list with ?page=). */
export async function membersPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const saved = await loadSegment(req, res, p);
  const at = pageOf(req);
  const listed = await submitRoute(MEMBERS, p, req, res, { query: { segment_id: saved.id, page: at, per_page: PER_PAGE } });
  if (!listed.ok) throw new AppError(listed.status, listed.errors);
  const { contactEmails: rows, pagination } = listed.message as { contactEmails: Member[]; pagination: { total: number } };
  sendPage(
    res,
    200,
    <Layout title={`Members of ${saved.segment_name}`} csrf={p.session.csrf} active="contacts" styles={['audience.css']}>
      <p class="crumbs">
        <a href="/app/contacts">Contacts</a> › <a href={`/app/segments/${saved.id}`}>{saved.segment_name}</a> › members
      </p>
      <h1>Members of {saved.segment_name}</h1>
      <p>
        <strong data-metric="members">{count(pagination.total)}</strong> member{pagination.total === 1 ? '' : 's'}.{' '}
        {allowed(p, 'audience:manage') ? (
          <a href={`/app/segments/${saved.id}/export.csv`} download>
            Export CSV
          </a>
        ) : null}
      </p>
      <Table<Member>
        name="members"
        caption={`Members of ${saved.segment_name}: added by hand first, then matching contacts, newest first`}
        rows={rows}
        empty="No contact matches its rules."
        columns={[
          { label: 'Address', cell: (m) => (m.contact_id ? <a href={`/app/contacts/${m.contact_id}`}>{m.email}</a> : m.email) },
          { label: 'Name', cell: (m) => m.fullname || '–' },
        ]}
      />
      <Pager at={at} total={pagination.total} href={(n) => `/app/segments/${saved.id}/members?page=${n}`} label="Pages of members" />
    </Layout>,
  );
}

export const exportSegmentAction = (req: Request, res: Response, p: PageContext) => exportAction(req, res, p, { segment_id: pathId(req.params.id) });
