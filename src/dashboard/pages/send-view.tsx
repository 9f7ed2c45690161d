import type { Request, Response } from 'express';
import type { ComponentChildren } from 'preact';
import { AppError } from '../../http/errors';
import { searchContacts } from '../../resources/contacts/search.service';
import { duplicateSingleSend } from '../../resources/single-sends/single-sends.service';
import { SendStatus } from '../../states';
import { Section } from '../components';
import { emptyForm, ErrorSummary, Field, FORM_ERROR, submitRoute, type FormState } from '../form-kit';
import { when } from '../format';
import { Csrf, Layout, MessagePage, PostButton } from '../layout';
import { FRAMING_PAGE_HEADERS, sendEmailPreview } from '../preview-frame';
import { errorLines, sendPage, type PageContext } from '../respond';
import { sendReportPage } from './send';
import { apiBody, audienceOf, audienceText, recordValues, refusedInEditor, sendToActOn, startedPage } from './send-form';
import { apiRoute, loadSend, localToUtc, notStarted, statusWord, type SendRecord } from './send-shared';
import { allowed, auditAction } from '../permissions';

/**
 * A send's own page. Before it starts: what it is, its actions (edit, schedule, unschedule,
 * send now with a confirmation naming the audience's size, duplicate, delete), its preview as a
 * chosen contact at desktop and phone width with the text part, and a test send. Once started:
 * its report (send.tsx), which links to the same preview.
 */
const one = (v: unknown) => (typeof v === 'string' ? v : '');
const positiveId = (v: unknown) => (/^\d{1,10}$/.test(one(v)) && Number(v) >= 1 && Number(v) <= 2_147_483_647 ? Number(v) : undefined);

const FLASHES: Record<string, string> = {
  draft: 'Saved as a draft.',
  scheduled: 'Scheduled.',
  unscheduled: 'Unscheduled: the send is a draft again.',
  duplicated: 'This is a copy, saved as a draft.',
};

interface Preview {
  subject: string;
  html: string;
  text: string;
  variations?: Array<{ variation: string; subject: string; html: string; text: string }>;
}

interface PreviewState {
  contactId?: number;
  variation: number;
  q: string;
  found: Array<{ id: number; email: string; name: string }>;
  preview?: Preview;
  /** Why there is nothing to show (the API's words), or why the contact is refused. */
  problems: string[];
  contactProblems: string[];
}

/** The API's preview (GET /single/send/preview), as the page shows it; its refusals as lines. */
async function runPreview(req: Request, res: Response, p: PageContext, utr: string, contactId: number | undefined): Promise<{ preview?: Preview; problems: string[]; contactProblems: string[] }> {
  try {
    const out = await submitRoute(apiRoute('get', '/single/send/preview'), p, req, res, { query: { utr, ...(contactId ? { contact_id: contactId } : {}) } });
    if (out.ok) return { preview: out.message as Preview, problems: [], contactProblems: [] };
    const contact = out.errors.contact_id ?? [];
    return { problems: Object.entries(out.errors).filter(([k]) => k !== 'contact_id').flatMap(([, v]) => v), contactProblems: contact };
  } catch (err) {
    // No such contact in the account (NF1): beside the contact field, not a page of its own.
    if (contactId && err instanceof AppError && err.status === 404) return { problems: [], contactProblems: errorLines(err.errors) };
    throw err;
  }
}

async function previewState(req: Request, res: Response, p: PageContext, utr: string): Promise<PreviewState> {
  const contactId = positiveId(req.query.contact_id);
  const variation = Math.min(Math.max(Number(one(req.query.variation)) || 0, 0), 5);
  const q = one(req.query.q).trim().slice(0, 255);
  const found = q
    ? (await searchContacts(p.ctx, { q }, { page: 1, perPage: 10 })).rows.map((c) => {
        const r = c as { id: number; email: string; first_name?: string | null; last_name?: string | null };
        return { id: r.id, email: r.email, name: `${r.first_name ?? ''} ${r.last_name ?? ''}`.trim() };
      })
    : [];
  const shown = await runPreview(req, res, p, utr, contactId);
  return { contactId, variation, q, found, ...shown };
}

function PreviewSection({ utr, s, base }: { utr: string; s: PreviewState; base: string }) {
  const variations = s.preview?.variations;
  const current = variations ? (variations[s.variation] ?? variations[0]) : s.preview;
  const frame = (extra: Record<string, string>) =>
    `/app/sends/${utr}/preview/frame?${new URLSearchParams({ ...(s.contactId ? { contact_id: String(s.contactId) } : {}), variation: String(s.variation), ...extra })}`;
  const keep = (params: Record<string, string>) => `${base}?${new URLSearchParams(params)}#preview`;
  return (
    <Section title="Preview" id="preview">
      <form method="get" action={`${base}#preview`} class="row" role="search" aria-label="Find a contact to preview as">
        <label for="preview-q">Find a contact by address or name</label>
        <input id="preview-q" name="q" type="search" value={s.q} maxLength={255} autoComplete="off" />
        <button type="submit" class="secondary">
          Find
        </button>
      </form>
      {s.q ? (
        s.found.length ? (
          <ul class="contact-picks" aria-label="Contacts found">
            {s.found.map((c) => (
              <li>
                <a href={keep({ contact_id: String(c.id), q: s.q })} data-contact-id={c.id}>
                  Preview as {c.email}
                </a>
                {c.name ? <span class="muted"> · {c.name}</span> : null}
              </li>
            ))}
          </ul>
        ) : (
          <p class="muted">No contact matches “{s.q}”.</p>
        )
      ) : null}
      <form method="get" action={`${base}#preview`} class="form preview-contact">
        <Field
          state={{ values: { contact_id: s.contactId ?? '' }, errors: s.contactProblems.length ? { contact_id: s.contactProblems } : {} }}
          name="contact_id"
          label="Contact id"
          type="number"
          hint="Placeholders are filled from this contact; without one, from sample values."
          attrs={{ min: 1 }}
        />
        <div class="actions">
          <button type="submit" class="secondary">
            Preview as this contact
          </button>
          {s.contactId ? <a href={`${base}#preview`}>Use sample values</a> : null}
        </div>
      </form>
      {s.problems.length ? (
        <div class="nothing-to-preview">
          <p>Nothing to preview yet:</p>
          <ul class="errors">
            {s.problems.map((m) => (
              <li>{m}</li>
            ))}
          </ul>
        </div>
      ) : null}
      {current ? (
        <>
          {variations ? (
            <nav aria-label="Variations" class="actions">
              {variations.map((v, i) => (
                <a href={keep({ ...(s.contactId ? { contact_id: String(s.contactId) } : {}), variation: String(i) })} aria-current={i === s.variation ? 'page' : undefined}>
                  Variation {v.variation}
                </a>
              ))}
            </nav>
          ) : null}
          <p>
            Subject: <strong class="subject" data-preview-subject>{current.subject}</strong>
          </p>
          <div class="previews">
            <figure class="preview desktop">
              <figcaption>Desktop</figcaption>
              <iframe src={frame({})} title="The email at desktop width" sandbox="" loading="lazy" />
            </figure>
            <figure class="preview phone">
              <figcaption>Phone (375 px)</figcaption>
              <iframe src={frame({})} title="The email at phone width" sandbox="" loading="lazy" />
            </figure>
          </div>
          <details class="text-part">
            <summary>Text part</summary>
            <pre class="raw" tabIndex={0} data-preview-text>
              {current.text}
            </pre>
          </details>
        </>
      ) : null}
    </Section>
  );
}

function TestSection({ utr, csrf, state }: { utr: string; csrf: string; state: FormState }) {
  return (
    <Section title="Send a test" id="test">
      <form method="post" action={`/app/sends/${utr}/test`} class="form" novalidate>
        <Csrf token={csrf} />
        <Field state={state} name="emails" label="To" type="textarea" rows={3} hint="Up to 10 addresses, one per line or separated by commas. The subject starts with [Test]." attrs={{ spellcheck: false }} />
        <Field state={state} id="test-contact_id" name="contact_id" label="As contact id (optional)" type="number" hint="Whose values fill the placeholders; without one, sample values." attrs={{ min: 1 }} />
        <div class="actions">
          <button type="submit">Send the test</button>
        </div>
      </form>
    </Section>
  );
}

function Summary({ send, tz, audience }: { send: SendRecord; tz: string; audience: string }) {
  const at = send.schedule_type === 1 && send.schedule_date !== '0000-00-00' ? `${send.schedule_date}T${send.schedule_time}Z` : null;
  const items: Array<[string, ComponentChildren]> = [
    ['Subject', send.subject || '–'],
    ['Preheader', send.preheader || '–'],
    ['Sender', send.from_sender ? `${send.sender_name ?? ''} <${send.from_sender}>` : '–'],
    ['Audience', audience],
    ['When', at ? <time dateTime={at}>{when(at, tz)}</time> : send.status === SendStatus.Ready ? 'now' : 'not scheduled'],
    ['A/B test', send.ab_test_type ? `the ${send.ab_test_type}, ${(send.ab_variations?.length ?? 0) + 1} variations` : 'none'],
  ];
  return (
    <dl class="fields">
      {items.map(([k, v]) => (
        <div>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

interface ViewStates {
  schedule?: FormState;
  test?: FormState;
  status?: number;
}

/** The page of a send that has not started (or its report once it has). */
async function renderSendView(req: Request, res: Response, p: PageContext, send: SendRecord, states: ViewStates = {}): Promise<void> {
  const base = `/app/sends/${send.utr}`;
  const [audience, preview] = await Promise.all([audienceOf(p, recordValues(send, p.tz)), previewState(req, res, p, send.utr)]);
  const flash = FLASHES[one(req.query.saved)] ?? (one(req.query.tested) ? `Test sent: ${one(req.query.tested)} ${one(req.query.tested) === '1' ? 'message' : 'messages'}.` : '');
  const scheduleState = states.schedule ?? emptyForm();
  const testState = states.test ?? emptyForm({ contact_id: preview.contactId ?? '' });
  const draft = send.status === SendStatus.Draft;
  const manage = allowed(p, 'campaigns:manage');
  const sends = allowed(p, 'campaigns:send');
  sendPage(
    res,
    states.status ?? 200,
    <Layout title={send.single_send_name} csrf={p.session.csrf} active="sends" styles={['sends.css']}>
      <h1>{send.single_send_name}</h1>
      <p class="muted">
        <span data-status={send.status}>{statusWord(send.status, send.schedule_type)}</span> · <a href="/app/sends">All sends</a>
      </p>
      {flash ? (
        <p class="flash" role="status">
          {flash}
        </p>
      ) : null}
      <Summary send={send} tz={p.tz} audience={audienceText(audience)} />
      <div class="actions send-actions">
        {manage ? (
          <a class="button" href={`${base}/edit`}>
            Edit
          </a>
        ) : null}
        {draft || !sends ? null : <PostButton action={`${base}/unschedule`} csrf={p.session.csrf} label="Unschedule" name={send.single_send_name} />}
        {sends ? (
          <a class="button secondary" href={`${base}/send-now`}>
            Send now…
          </a>
        ) : null}
        {manage ? <PostButton action={`${base}/duplicate`} csrf={p.session.csrf} label="Duplicate" name={send.single_send_name} /> : null}
        {manage ? (
          <a class="button secondary" href={`${base}/delete`}>
            Delete…
          </a>
        ) : null}
      </div>
      {sends ? (
        <Section title={draft ? 'Schedule' : 'Reschedule'} id="schedule">
          <ErrorSummary state={scheduleState} fields={['send_at']} />
          {Object.keys(scheduleState.errors).some((k) => k !== 'send_at') ? (
            <p>
              <a href={`${base}/edit`}>Edit the send</a> to fix what is missing.
            </p>
          ) : null}
          <form method="post" action={`${base}/schedule`} class="form" novalidate>
            <Csrf token={p.session.csrf} />
            <Field state={scheduleState} name="send_at" label="Send at" type="datetime-local" hint={`In your time zone, ${p.tz}. Empty: the send’s own time.`} attrs={{ step: 1 }} />
            <div class="actions">
              <button type="submit">{draft ? 'Schedule' : 'Reschedule'}</button>
            </div>
          </form>
        </Section>
      ) : null}
      <PreviewSection utr={send.utr} s={preview} base={base} />
      {manage ? <TestSection utr={send.utr} csrf={p.session.csrf} state={testState} /> : null}
    </Layout>,
    FRAMING_PAGE_HEADERS,
  );
}

/** GET /app/sends/:utr: the page of a send not started, the report of one that has. */
export async function sendViewPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await loadSend(p, String(req.params.utr));
  if (!notStarted(send.status)) {
    await sendReportPage(req, res, p);
    return;
  }
  await renderSendView(req, res, p, send);
}

/** GET /app/sends/:utr/preview: the preview and the test of any send (a started send's report links here). */
export async function sendPreviewPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await loadSend(p, String(req.params.utr));
  const base = `/app/sends/${send.utr}/preview`;
  const preview = await previewState(req, res, p, send.utr);
  sendPage(
    res,
    200,
    <Layout title={`Preview: ${send.single_send_name}`} csrf={p.session.csrf} active="sends" styles={['sends.css']}>
      <h1>Preview: {send.single_send_name}</h1>
      <p>
        <a href={`/app/sends/${send.utr}`}>Back to the send</a>
      </p>
      <PreviewSection utr={send.utr} s={preview} base={base} />
      {allowed(p, 'campaigns:manage') ? <TestSection utr={send.utr} csrf={p.session.csrf} state={emptyForm({ contact_id: preview.contactId ?? '' })} /> : null}
    </Layout>,
    FRAMING_PAGE_HEADERS,
  );
}

/** GET /app/sends/:utr/preview/frame: the email's HTML itself, sandboxed, for the preview's frames. */
export async function previewFrame(req: Request, res: Response, p: PageContext): Promise<void> {
  const utr = String(req.params.utr);
  const { preview, problems, contactProblems } = await runPreview(req, res, p, utr, positiveId(req.query.contact_id));
  const variation = Math.min(Math.max(Number(one(req.query.variation)) || 0, 0), 5);
  const html = preview ? (preview.variations?.[variation] ?? preview).html : `<!doctype html><p>${[...problems, ...contactProblems].join(' ').replace(/[<>&]/g, '')}</p>`;
  sendEmailPreview(res, html);
}

/** POST /app/sends/:utr/test: POST /single/send/test with the typed addresses; errors beside the fields. */
export async function testSendAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await loadSend(p, String(req.params.utr));
  const values = { emails: one(req.body?.emails), contact_id: one(req.body?.contact_id) };
  const emails = values.emails.split(/[\s,;]+/).filter(Boolean);
  const body = { utr: send.utr, emails, ...(values.contact_id.trim() ? { contact_id: values.contact_id.trim() } : {}) };
  let errors: Record<string, string[]>;
  let status: number;
  try {
    const out = await submitRoute(apiRoute('post', '/single/send/test'), p, req, res, { body });
    if (out.ok) {
      res.redirect(303, `/app/sends/${send.utr}${notStarted(send.status) ? '' : '/preview'}?tested=${(out.message as { sent: number }).sent}#test`);
      return;
    }
    ({ errors, status } = out);
  } catch (err) {
    // The contact is not the account's (NF1), or the mail server did not take a copy (503): said beside the form.
    if (!(err instanceof AppError) || (err.status !== 404 && err.status !== 503)) throw err;
    if (err.headers['Retry-After']) res.set('Retry-After', err.headers['Retry-After']);
    errors = err.status === 404 ? { contact_id: errorLines(err.errors) } : { [FORM_ERROR]: errorLines(err.errors) };
    status = err.status === 404 ? 422 : 503;
  }
  // A refusal that names no field of this form (the limit, the mail server, a send that lacks its subject) is the addresses' too.
  const shown: Record<string, string[]> = { ...errors };
  const elsewhere = Object.entries(errors).filter(([k]) => k !== 'emails' && !k.startsWith('emails.') && k !== 'contact_id').flatMap(([, v]) => v);
  if (elsewhere.length) shown.emails = [...(errors.emails ?? []), ...elsewhere];
  const state: FormState = { values, errors: shown };
  if (notStarted(send.status)) {
    await renderSendView(req, res, p, send, { test: state, status });
    return;
  }
  const preview = await previewState(req, res, p, send.utr);
  sendPage(
    res,
    status,
    <Layout title={`Preview: ${send.single_send_name}`} csrf={p.session.csrf} active="sends" styles={['sends.css']}>
      <h1>Preview: {send.single_send_name}</h1>
      <ErrorSummary state={state} fields={['emails', 'contact_id']} />
      <PreviewSection utr={send.utr} s={preview} base={`/app/sends/${send.utr}/preview`} />
      <TestSection utr={send.utr} csrf={p.session.csrf} state={state} />
    </Layout>,
    FRAMING_PAGE_HEADERS,
  );
}

/** POST /app/sends/:utr/schedule: POST /single/send/schedule, `send_at` read in the browser's zone. */
export async function scheduleAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p);
  if (!send) return;
  const typed = one(req.body?.send_at).trim();
  // Without a time a send due "now" is sent: that asks for the confirmation first.
  if (!typed && send.schedule_type === 0) {
    res.redirect(303, `/app/sends/${send.utr}/send-now`);
    return;
  }
  const utc = typed ? localToUtc(typed, p.tz) : undefined;
  const out = await submitRoute(apiRoute('post', '/single/send/schedule'), p, req, res, { body: { utr: send.utr, ...(typed ? { send_at: utc ? `${utc.date} ${utc.time}` : typed } : {}) } });
  if (out.ok) {
    res.redirect(303, `/app/sends/${send.utr}?saved=scheduled`);
    return;
  }
  await renderSendView(req, res, p, send, { schedule: { values: { send_at: typed }, errors: out.errors }, status: out.status });
}

/** POST /app/sends/:utr/unschedule: POST /single/send/unschedule (back to a draft). */
export async function unscheduleAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await loadSend(p, String(req.params.utr));
  const out = await submitRoute(apiRoute('post', '/single/send/unschedule'), p, req, res, { query: { utr: send.utr } });
  if (out.ok) {
    res.redirect(303, `/app/sends/${send.utr}?saved=unscheduled`);
    return;
  }
  if (!notStarted(send.status)) {
    startedPage(res, p, send);
    return;
  }
  await renderSendView(req, res, p, send, { schedule: { values: {}, errors: out.errors }, status: out.status });
}

/** GET /app/sends/:utr/send-now: the confirmation, naming the audience's size. */
export async function sendNowPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p);
  if (!send) return;
  const audience = await audienceOf(p, recordValues(send, p.tz));
  sendPage(
    res,
    200,
    <MessagePage title="Send now?" csrf={p.session.csrf} active="sends">
      <p>
        <strong>{send.single_send_name}</strong> will be sent now to <strong data-audience-size={audience.recipients}>{audienceText(audience)}</strong>.
      </p>
      {send.status === SendStatus.Draft ? <p class="muted">Until you confirm, it stays a draft.</p> : null}
      <div class="actions">
        <form method="post" action={`/app/sends/${send.utr}/send-now`} class="inline">
          <Csrf token={p.session.csrf} />
          <button type="submit">Send now to {audience.recipients === 1 ? '1 recipient' : `${audience.recipients.toLocaleString('en-US')} recipients`}</button>
        </form>
        <a href={`/app/sends/${send.utr}`}>Cancel</a>
      </div>
    </MessagePage>,
  );
}

/**
 * POST /app/sends/:utr/send-now: the stored send, due now, through POST /single/send/update (its
 * every check); a refusal opens the editor with the messages beside the fields to fix.
 */
export async function sendNowAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p);
  if (!send) return;
  const out = await submitRoute(apiRoute('post', '/single/send/update'), p, req, res, { body: apiBody(recordValues(send, p.tz), p.tz, 'send'), query: { utr: send.utr } });
  if (out.ok) {
    res.redirect(303, `/app/sends/${send.utr}`);
    return;
  }
  await refusedInEditor(res, p, send, out.status, out.errors);
}

/** GET /app/sends/:utr/delete: the confirmation. */
export async function deleteSendPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p, (status) => status !== SendStatus.Running);
  if (!send) return;
  sendPage(
    res,
    200,
    <MessagePage title="Delete this send?" csrf={p.session.csrf} active="sends">
      <p>
        <strong>{send.single_send_name}</strong> will be deleted{send.status === SendStatus.Completed ? ', with its report' : ''}. This cannot be undone.
      </p>
      <div class="actions">
        <form method="post" action={`/app/sends/${send.utr}/delete`} class="inline">
          <Csrf token={p.session.csrf} />
          <button type="submit" class="danger">
            Delete
          </button>
        </form>
        <a href={`/app/sends/${send.utr}`}>Cancel</a>
      </div>
    </MessagePage>,
  );
}

/** POST /app/sends/:utr/delete: DELETE /single/send/delete. A running send is not deleted here. */
export async function deleteSendAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const send = await sendToActOn(req, res, p, (status) => status !== SendStatus.Running);
  if (!send) return;
  const out = await submitRoute(apiRoute('delete', '/single/send/delete'), p, req, res, { query: { utr: send.utr } });
  if (!out.ok) throw new AppError(out.status, out.errors);
  res.redirect(303, '/app/sends?deleted=1');
}

/** POST /app/sends/:utr/duplicate: the duplicate route's service (it answers the copy's utr), then the copy's editor. */
export async function duplicateSendAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const copy = await duplicateSingleSend(p.ctx, String(req.params.utr));
  await auditAction(p, { action: 'single_send.duplicated', objectKind: 'single_send', objectId: String(req.params.utr).toLowerCase(), summary: `copied as a draft: ${copy}` });
  res.redirect(303, `/app/sends/${copy}/edit?saved=duplicated`);
}
