import type { Request, Response } from 'express';
import { countAudience, type AudienceCount } from '../../contacts/audience-count';
import type { AudienceRef } from '../../contacts/audience-ref';
import { AB_CRITERIA, AB_IF_INCONCLUSIVE, AB_TYPES } from '../../ab/settings';
import { normalizeInput } from '../../http/form';
import { listContactTypes } from '../../resources/contact-types/contact-types.service';
import { listSegments } from '../../resources/segments/segments.service';
import { listSenders } from '../../resources/senders/senders.service';
import { RECIPIENT_REF } from '../../resources/single-sends/single-sends.schemas';
import { listTemplates } from '../../resources/templates/templates.service';
import { listGroups } from '../../resources/unsubscribe-groups/unsubscribe-groups.service';
import { ScheduleType } from '../../states';
import { count } from '../format';
import { emptyForm, ErrorSummary, Field, FORM_ERROR, submitRoute, type Choice, type FormState } from '../form-kit';
import { Csrf, Layout, MessagePage } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { apiRoute, loadSend, localToUtc, notStarted, utcToLocal, type SendRecord } from './send-shared';

/**
 * The send editor: one form for a new send and for editing one that has not started, submitted
 * to POST /single/send/create or /update (their validation, their words): "Save draft"
 * (draft=1, only the name is required), "Schedule" (every check; ready at its time) and "Send
 * now…" (saved as a draft, then a confirmation that names the audience's size). The recipients'
 * count is live through sends.js and GET /app/sends/audience-count; without script it shows the
 * saved send's count.
 */
const VARIATIONS = 5;
const AB_SETTINGS = ['ab_test_percentage', 'ab_duration_minutes', 'ab_winner_criteria', 'ab_confidence', 'ab_if_inconclusive'] as const;
const VARIATION_FIELDS = ['subject', 'template_id', 'sender_id', 'template_html', 'template_json'] as const;
const PLAIN = ['single_send_name', 'subject', 'preheader', 'sender_id', 'unsubscribe_group_id', 'template_id', 'template_html', 'template_json'] as const;

/** The fields the form shows, for the summary's links. */
const FIELDS = [
  ...PLAIN,
  'recipient_id',
  'exclude_specific_recipient_id',
  'schedule_at',
  'ab_test_type',
  ...Array.from({ length: VARIATIONS }, (_, i) => [`ab_variations.${i}.subject`, `ab_variations.${i}.template_id`, `ab_variations.${i}.sender_id`]).flat(),
  ...AB_SETTINGS,
];

/** How a form is saved: a draft; scheduled at its time; a draft that goes to the send-now confirmation; sent now (confirmed). */
export type SaveMode = 'draft' | 'schedule' | 'now' | 'send';

const str = (v: unknown) => (v === undefined || v === null ? '' : String(v));
const strings = (v: unknown) => (Array.isArray(v) ? v.map(String) : v === undefined || v === null || v === '' ? [] : [String(v)]);

/** A posted form as FormState values: the multiselects' `name[]` under their names. */
export function postedValues(body: unknown): Record<string, unknown> {
  const raw = (body ?? {}) as Record<string, unknown>;
  const values: Record<string, unknown> = { ...raw };
  for (const name of ['recipient_id', 'exclude_specific_recipient_id']) {
    values[name] = strings(raw[`${name}[]`] ?? raw[name]);
    delete values[`${name}[]`];
  }
  delete values._csrf;
  return values;
}

/** A stored send as the form's values (its schedule in the browser's zone). */
export function recordValues(r: SendRecord, tz: string): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const f of PLAIN) values[f] = str(r[f]);
  values.recipient_id = r.recipient_id.map((x) => `${x.table}${x.id}`);
  values.exclude_specific_recipient_id = r.exclude_specific_recipient_id.map((x) => `${x.table}${x.id}`);
  values.schedule_at = r.schedule_type === ScheduleType.At && r.schedule_date !== '0000-00-00' ? utcToLocal(`${r.schedule_date}T${r.schedule_time}Z`, tz) : '';
  if (r.ab_test_type) {
    values.ab_test_type = r.ab_test_type;
    (r.ab_variations ?? []).forEach((v, i) => {
      for (const f of VARIATION_FIELDS) values[`ab_variations.${i}.${f}`] = str(v[f]);
    });
    for (const f of AB_SETTINGS) values[f] = str(r[f]);
  }
  return values;
}

/**
 * The API's body from the form's values: only what was given (an empty control is no value),
 * the schedule as the API's UTC date and time, the A/B fields only with a test type. A time that
 * is no date and time is passed on as typed, for the API to refuse in its words.
 */
export function apiBody(values: Record<string, unknown>, tz: string, mode: SaveMode): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const f of PLAIN) if (str(values[f]).trim() !== '') body[f] = str(values[f]);
  for (const f of ['recipient_id', 'exclude_specific_recipient_id']) {
    const chosen = strings(values[f]);
    if (chosen.length) body[f] = chosen;
  }
  const at = str(values.schedule_at).trim();
  const timed = mode === 'schedule' || (mode === 'draft' && at !== '');
  body.schedule_type = timed ? ScheduleType.At : ScheduleType.Now;
  if (timed && at) {
    const utc = localToUtc(at, tz);
    body.schedule_date = utc ? utc.date : at;
    body.schedule_time = utc ? utc.time : at;
  }
  const type = str(values.ab_test_type).trim();
  if (type) {
    body.ab_test_type = type;
    const rows = Array.from({ length: VARIATIONS }, (_, i) =>
      Object.fromEntries(VARIATION_FIELDS.map((f) => [f, str(values[`ab_variations.${i}.${f}`])]).filter(([, v]) => v.trim() !== '')),
    );
    // Up to the last variation given: an empty one before it stays, so the API's `ab_variations.<i>` keys name the form's rows.
    const last = rows.findLastIndex((v) => Object.keys(v).length > 0);
    if (last >= 0) body.ab_variations = rows.slice(0, last + 1);
    for (const f of AB_SETTINGS) if (str(values[f]).trim() !== '') body[f] = str(values[f]);
  }
  if (mode === 'draft' || mode === 'now') body.draft = 1;
  return body;
}

/** The API's messages by the form's fields: the schedule's date and time belong to the one time field. */
export function formErrors(errors: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(errors)) {
    const key = k === 'schedule_date' || k === 'schedule_time' || k === 'schedule_type' ? 'schedule_at' : k;
    out[key] = [...new Set([...(out[key] ?? []), ...v])];
  }
  return out;
}

interface Choices {
  senders: Choice[];
  groups: Choice[];
  audiences: Choice[];
  templates: Choice[];
}

async function loadChoices(p: PageContext): Promise<Choices> {
  const [senders, groups, lists, segments, templates] = await Promise.all([
    listSenders(p.ctx),
    listGroups(p.ctx),
    listContactTypes(p.ctx),
    listSegments(p.ctx),
    listTemplates(p.ctx).catch(() => []),
  ]);
  const none = { value: '', label: '— choose —' };
  return {
    senders: [none, ...senders.rows.map((s) => ({ value: String(s.id), label: `${s.from_name} <${s.from_email}>${s.is_verified ? '' : ' (not verified)'}` }))],
    groups: [none, ...(groups.rows as Array<{ id: number; group_name: string }>).map((g) => ({ value: String(g.id), label: g.group_name }))],
    audiences: [
      ...(lists.rows as Array<{ id: number; name: string; contacts_count: number }>).map((l) => ({ value: `contacts_${l.id}`, label: `List: ${l.name} (${count(l.contacts_count)})` })),
      ...(segments.rows as Array<{ id: number; segment_name: string; segment_emails_count: number }>).map((s) => ({
        value: `segments_${s.id}`,
        label: `Segment: ${s.segment_name} (${count(s.segment_emails_count)})`,
      })),
    ],
    templates: [none, ...templates.map((t) => ({ value: String(t.id), label: `${t.template_name}${t.is_blank ? ' (blank: its HTML below)' : ''}` }))],
  };
}

/** The refs of a form's or a send's recipients (malformed ones left out: this only counts). */
export function audienceRefs(values: string[]): AudienceRef[] {
  return values
    .map((v) => RECIPIENT_REF.exec(v))
    .filter((m) => m !== null)
    .slice(0, 100)
    .map((m) => ({ id: String(Number(m[2])), table: `${m[1]}_` as AudienceRef['table'] }));
}

export function audienceText(c: AudienceCount): string {
  const people = `${count(c.recipients)} ${c.recipients === 1 ? 'recipient' : 'recipients'}`;
  return c.suppressed ? `${people}, of whom ${count(c.suppressed)} will not be sent (unsubscribed, bounced or suppressed)` : people;
}

export async function audienceOf(p: PageContext, values: Record<string, unknown>): Promise<AudienceCount> {
  const group = Number(str(values.unsubscribe_group_id));
  return countAudience(
    p.deps.db,
    p.ctx.userId,
    audienceRefs(strings(values.recipient_id)),
    audienceRefs(strings(values.exclude_specific_recipient_id)),
    Number.isInteger(group) && group > 0 && group <= 2_147_483_647 ? group : null,
  );
}

/** GET /app/sends/audience-count?recipient_id[]=…&exclude_specific_recipient_id[]=…&unsubscribe_group_id=: the live count (sends.js). */
export async function audienceCountJson(req: Request, res: Response, p: PageContext): Promise<void> {
  const c = await audienceOf(p, normalizeInput(req.query));
  res.set('Cache-Control', 'no-store').json({ ...c, text: audienceText(c) });
}

function SendForm({ p, state, choices, utr, name, audience }: { p: PageContext; state: FormState; choices: Choices; utr?: string; name?: string; audience?: AudienceCount }) {
  const tzHint = `In your time zone, ${p.tz}.`;
  const variationRows = Array.from({ length: VARIATIONS }, (_, i) => i);
  const abErrors = state.errors.ab_variations ?? [];
  return (
    <Layout title={utr ? `Edit ${name}` : 'New send'} csrf={p.session.csrf} active="sends" scripts={['sends.js']} styles={['sends.css']}>
      <h1>{utr ? `Edit: ${name}` : 'New send'}</h1>
      <p>
        <a href={utr ? `/app/sends/${utr}` : '/app/sends'}>{utr ? 'Back to the send' : 'Back to the sends'}</a>
      </p>
      <ErrorSummary state={state} fields={FIELDS} />
      <form method="post" action={utr ? `/app/sends/${utr}/edit` : '/app/sends/new'} class="form send-form" novalidate>
        <Csrf token={p.session.csrf} />
        <fieldset>
          <legend>Message</legend>
          <Field state={state} name="single_send_name" label="Name" required attrs={{ maxLength: 255 }} hint="For you: recipients do not see it." />
          <Field state={state} name="subject" label="Subject" attrs={{ maxLength: 255 }} />
          <Field state={state} name="preheader" label="Preheader" attrs={{ maxLength: 255 }} hint="The line an inbox shows after the subject." />
          <Field state={state} name="template_id" label="Design" type="select" choices={choices.templates} hint={<>Built-in and saved designs (<a href="/app/designs">Designs</a>).</>} />
          <Field
            state={state}
            name="template_html"
            label="HTML (with the blank design)"
            type="textarea"
            rows={8}
            hint="Placeholders such as ((first_name)) are filled from each contact; ((unsubscribe_preferences)) is the unsubscribe link."
            attrs={{ spellcheck: false }}
          />
          {str(state.values.template_json) ? <input type="hidden" name="template_json" value={str(state.values.template_json)} /> : null}
        </fieldset>
        <fieldset>
          <legend>From</legend>
          <Field state={state} name="sender_id" label="Sender" type="select" choices={choices.senders} hint={<>Only a verified sender can send (<a href="/app/senders">Senders</a>).</>} />
          <Field state={state} name="unsubscribe_group_id" label="Unsubscribe group" type="select" choices={choices.groups} attrs={{ 'data-audience': 'group' }} />
        </fieldset>
        <fieldset>
          <legend>Recipients</legend>
          <Field state={state} name="recipient_id" label="Send to" type="multiselect" choices={choices.audiences} hint="Lists and segments; an address in several is sent once." attrs={{ 'data-audience': 'include' }} />
          <Field state={state} name="exclude_specific_recipient_id" label="Leave out" type="multiselect" choices={choices.audiences} hint="Addresses in these are not sent to." attrs={{ 'data-audience': 'exclude' }} />
          <p class="audience">
            Audience:{' '}
            <output id="audience-count" for="field-recipient_id field-exclude_specific_recipient_id" aria-live="polite">
              {audience ? audienceText(audience) : 'counted once the send is saved.'}
            </output>
          </p>
        </fieldset>
        <fieldset class="ab">
          <legend>A/B test (optional)</legend>
          <p class="hint">Leave the type empty for an ordinary send. Each variation holds the field its type varies; the send’s own is variation A.</p>
          <Field state={state} name="ab_test_type" label="Test" type="select" choices={[{ value: '', label: 'No A/B test' }, ...AB_TYPES.map((t) => ({ value: t, label: `the ${t}` }))]} />
          {abErrors.length ? (
            <ul class="field-errors">
              {abErrors.map((m) => (
                <li>{m}</li>
              ))}
            </ul>
          ) : null}
          {variationRows.map((i) => (
            <fieldset class="variation">
              <legend>Variation {String.fromCharCode(66 + i)}</legend>
              <Field state={state} name={`ab_variations.${i}.subject`} label={`Subject ${String.fromCharCode(66 + i)}`} attrs={{ maxLength: 255 }} />
              <Field state={state} name={`ab_variations.${i}.template_id`} label={`Design ${String.fromCharCode(66 + i)}`} type="select" choices={choices.templates} />
              <Field state={state} name={`ab_variations.${i}.sender_id`} label={`Sender ${String.fromCharCode(66 + i)}`} type="select" choices={choices.senders} />
              {(['template_html', 'template_json'] as const).map((f) =>
                str(state.values[`ab_variations.${i}.${f}`]) ? <input type="hidden" name={`ab_variations.${i}.${f}`} value={str(state.values[`ab_variations.${i}.${f}`])} /> : null,
              )}
            </fieldset>
          ))}
          <Field state={state} name="ab_test_percentage" label="Share of the audience in the test (%)" type="number" attrs={{ min: 1, max: 100, placeholder: '20' }} />
          <Field state={state} name="ab_duration_minutes" label="Test duration (minutes)" type="number" attrs={{ min: 1, max: 10080, placeholder: '240' }} />
          <Field state={state} name="ab_winner_criteria" label="Winner by" type="select" choices={[{ value: '', label: 'default (click)' }, ...AB_CRITERIA.map((c) => ({ value: c, label: c }))]} />
          <Field state={state} name="ab_confidence" label="Confidence" type="number" attrs={{ min: 0.5, max: 0.999, step: 0.001, placeholder: '0.95' }} />
          <Field
            state={state}
            name="ab_if_inconclusive"
            label="If inconclusive"
            type="select"
            choices={[{ value: '', label: 'default (send the leader)' }, ...AB_IF_INCONCLUSIVE.map((c) => ({ value: c, label: c.replace('_', ' ') }))]}
          />
        </fieldset>
        <fieldset>
          <legend>When</legend>
          <Field state={state} name="schedule_at" label="Send at" type="datetime-local" hint={`${tzHint} Needed to schedule; a draft may keep a planned time.`} attrs={{ step: 1 }} />
        </fieldset>
        <div class="actions">
          <button type="submit" name="intent" value="draft">
            Save draft
          </button>
          <button type="submit" name="intent" value="schedule" class="secondary">
            Schedule
          </button>
          <button type="submit" name="intent" value="now" class="secondary">
            Send now…
          </button>
        </div>
      </form>
    </Layout>
  );
}

/** Renders the editor: a new send, a stored one, or a refused form again (its status, what was typed, the API's words). */
export async function renderSendForm(res: Response, p: PageContext, status: number, state: FormState, send?: { utr: string; name: string }): Promise<void> {
  const [choices, audience] = await Promise.all([loadChoices(p), strings(state.values.recipient_id).length ? audienceOf(p, state.values) : undefined]);
  sendPage(res, status, <SendForm p={p} state={state} choices={choices} utr={send?.utr} name={send?.name} audience={audience} />);
}

export async function newSendPage(_req: Request, res: Response, p: PageContext): Promise<void> {
  await renderSendForm(res, p, 200, emptyForm());
}

/** A send that has started: edited no more (the API would refuse it too). */
export function startedPage(res: Response, p: PageContext, send: SendRecord): void {
  sendPage(
    res,
    409,
    <MessagePage title="Sending has started" csrf={p.session.csrf} active="sends">
      <p>{send.single_send_name} has started sending: it can no longer be edited, scheduled or deleted.</p>
      <p>
        <a href={`/app/sends/${send.utr}`}>Open its report</a>
      </p>
    </MessagePage>,
  );
}

/**
 * The account's send named by the request, when `may` allows acting on it (by default: it has not
 * started); otherwise the page saying it has started is sent, and undefined returned.
 */
export async function sendToActOn(req: Request, res: Response, p: PageContext, may: (status: number) => boolean = notStarted): Promise<SendRecord | undefined> {
  const send = await loadSend(p, String(req.params.utr));
  if (may(send.status)) return send;
  startedPage(res, p, send);
  return undefined;
}

export async function editSendPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p);
  if (!send) return;
  await renderSendForm(res, p, 200, emptyForm(recordValues(send, p.tz)), { utr: send.utr, name: send.single_send_name });
}

const MODES: Record<string, SaveMode> = { draft: 'draft', schedule: 'schedule', now: 'now' };

/** POST /app/sends/new and /app/sends/:utr/edit: the API's create or update, then the send (or the send-now confirmation). */
export async function saveSendAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const values = postedValues(req.body);
  const mode = MODES[str(values.intent)] ?? 'draft';
  const utr = req.params.utr ? String(req.params.utr) : undefined;
  const stored = utr ? await loadSend(p, utr) : undefined;
  if (stored && !notStarted(stored.status)) {
    startedPage(res, p, stored);
    return;
  }
  const out = await submitRoute(apiRoute('post', utr ? '/single/send/update' : '/single/send/create'), p, req, res, {
    body: apiBody(values, p.tz, mode),
    query: utr ? { utr } : {},
  });
  if (!out.ok) {
    await renderSendForm(res, p, out.status, { values, errors: formErrors(out.errors) }, stored ? { utr: stored.utr, name: stored.single_send_name } : undefined);
    return;
  }
  const saved = utr ?? (out.message as { utr: string }).utr;
  res.redirect(303, mode === 'now' ? `/app/sends/${saved}/send-now` : `/app/sends/${saved}?saved=${mode === 'schedule' ? 'scheduled' : 'draft'}`);
}

/** The API's refusal of a stored send (scheduling or sending it), shown in the editor beside the fields to fix. */
export async function refusedInEditor(res: Response, p: PageContext, send: SendRecord, status: number, errors: Record<string, string[]>): Promise<void> {
  const mapped = formErrors(errors);
  if (mapped.utr) {
    mapped[FORM_ERROR] = mapped.utr;
    delete mapped.utr;
  }
  await renderSendForm(res, p, status, { values: recordValues(send, p.tz), errors: mapped }, { utr: send.utr, name: send.single_send_name });
}
