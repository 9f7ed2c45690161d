import type { Request, Response } from 'express';
import { automationRoutes } from '../../resources/automations/automations.router';
import { getAutomation } from '../../resources/automations/automations.service';
import { listSchedules } from '../../resources/automations/schedules.service';
import { listSenders } from '../../resources/senders/senders.service';
import { templateRoutes } from '../../resources/templates/templates.router';
import type { TemplateRecord } from '../../resources/templates/templates.schemas';
import { SenderVerification } from '../../states';
import { Table } from '../components';
import { emptyForm, ErrorSummary, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { Csrf, Layout, PostButton } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { posted, routeOf, withNone } from './sender-kit';

/**
 * An automation's emails: the list with their design, sender and wait, adding one (POST
 * /automations/schedule/create) and removing one (DELETE /automations/schedule/delete). The
 * design is chosen from what GET /get-design/template answers (the built-ins and the account's
 * saved designs), through that route.
 */
const ADD = routeOf(automationRoutes, '/automations/schedule/create');
const REMOVE = routeOf(automationRoutes, '/automations/schedule/delete');
const DESIGNS = routeOf(templateRoutes, '/get-design/template');

const FIELDS = ['subject', 'sender_id', 'template_id', 'waiting_type', 'waiting_period'];
const WAITS: Choice[] = [
  { value: 'instantly', label: 'Right away' },
  { value: 'hours', label: 'Hours' },
  { value: 'days', label: 'Days' },
];

type Schedule = Awaited<ReturnType<typeof listSchedules>>[number] & {
  utr: string;
  subject: string;
  sender_id: number;
  template_id: number;
  waiting_period: number;
  waiting_type: string;
};
type Sender = Awaited<ReturnType<typeof listSenders>>['rows'][number];

/** The designs GET /get-design/template lists for the account. */
async function designs(p: PageContext, req: Request, res: Response): Promise<TemplateRecord[]> {
  const done = await submitRoute(DESIGNS, p, req, res, {});
  return done.ok ? (done.message as { templates: TemplateRecord[] }).templates : [];
}

const senderLabel = (s: Sender) => `${s.nickname}: ${s.from_name} <${s.from_email}>${s.is_verified === SenderVerification.Verified ? '' : ' (not verified)'}`;
export const waits = (e: { waiting_type: string; waiting_period: number }) => (e.waiting_type === 'instantly' ? 'no wait' : `${e.waiting_period} ${e.waiting_type}`);

/** The automation's emails in sending order, with the names of their senders and designs. */
export async function loadSequence(p: PageContext, req: Request, res: Response, utr: string) {
  const [rows, senders, list] = await Promise.all([listSchedules(p.ctx, p.deps.config, utr), listSenders(p.ctx), designs(p, req, res)]);
  return {
    rows: (rows as Schedule[]).map((e, i) => ({ ...e, position: i + 1 })),
    senderNames: new Map(senders.rows.map((s) => [s.id, s.nickname])),
    designNames: new Map(list.map((d) => [d.id, d.template_name])),
  };
}
type Sequence = Awaited<ReturnType<typeof loadSequence>>;

/** The emails with what each is sent as, and a remove button each. */
export function SequenceTable({ seq, utr, csrf }: { seq: Sequence; utr: string; csrf: string }) {
  return (
    <Table<Sequence['rows'][number]>
      name="schedules"
      caption="The emails of the sequence, in sending order"
      rows={seq.rows}
      empty="No emails yet: add the first one."
      columns={[
        { label: '#', numeric: true, cell: (e) => e.position },
        { label: 'Subject', cell: (e) => e.subject },
        { label: 'Waits', cell: (e) => waits(e) },
        { label: 'Sender', cell: (e) => seq.senderNames.get(e.sender_id) ?? `sender ${e.sender_id} (deleted)` },
        { label: 'Design', cell: (e) => seq.designNames.get(e.template_id) ?? `design ${e.template_id}` },
        {
          label: 'Actions',
          cell: (e) => <PostButton action={`/app/automations/${utr}/emails/${e.utr}/delete`} csrf={csrf} label="Remove" name={`email ${e.position}, ${e.subject}`} />,
        },
      ]}
    />
  );
}

async function renderForm(req: Request, res: Response, p: PageContext, status: number, a: { utr: string; automation_name: string }, state: FormState): Promise<void> {
  const [senders, list] = await Promise.all([listSenders(p.ctx), designs(p, req, res)]);
  const senderChoices = senders.rows.map((s) => ({ value: String(s.id), label: senderLabel(s) }));
  const designChoices = list.map((d) => ({ value: String(d.id), label: d.template_name }));
  sendPage(
    res,
    status,
    <Layout title={`Add an email: ${a.automation_name}`} csrf={p.session.csrf} active="automations" styles={['settings.css']}>
      <p>
        <a href={`/app/automations/${a.utr}`}>{a.automation_name}</a>
      </p>
      <h1>Add an email</h1>
      <ErrorSummary state={state} fields={FIELDS} />
      <form method="post" action={`/app/automations/${a.utr}/emails/new`} class="form" noValidate>
        <Csrf token={p.session.csrf} />
        <Field state={state} name="subject" label="Subject" required />
        <Field
          state={state}
          name="sender_id"
          label="Sender"
          type="select"
          choices={withNone('Choose a sender', senderChoices)}
          hint={
            <>
              Only a verified sender can send. <a href="/app/senders">Senders</a>
            </>
          }
          required
        />
        <Field state={state} name="template_id" label="Design" type="select" choices={withNone('Choose a design', designChoices)} required />
        <fieldset>
          <legend>When it goes out</legend>
          <Field state={state} name="waiting_type" label="Wait" type="select" choices={WAITS} hint="After the contact entered (the first email) or after the previous email." required />
          <Field state={state} name="waiting_period" label="How many hours or days" type="number" hint="1 for an email sent right away." required attrs={{ min: 0, step: 1 }} />
        </fieldset>
        <div class="actions">
          <button type="submit">Add the email</button>
          <a href={`/app/automations/${a.utr}`}>Cancel</a>
        </div>
      </form>
    </Layout>,
  );
}

export async function newEmailPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const a = await getAutomation(p.ctx, String(req.params.utr));
  await renderForm(req, res, p, 200, a, emptyForm({ waiting_type: 'instantly', waiting_period: '1' }));
}

/**
 * The design's preview image goes with its id (the route wants both; a person picks a design,
 * not a file name). Without a design chosen, the route's message on `template_id` says so.
 */
export async function addEmailAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const a = await getAutomation(p.ctx, String(req.params.utr));
  const values = posted(req);
  const design = (await designs(p, req, res)).find((d) => String(d.id) === String(values.template_id ?? ''));
  const done = await submitRoute(ADD, p, req, res, { body: { ...values, utr: a.utr, preview_img: design?.preview_image } });
  if (done.ok) {
    res.redirect(303, `/app/automations/${a.utr}?done=email-added#sequence`);
    return;
  }
  const { preview_img: previewImage, ...errors } = done.errors;
  if (previewImage && !errors.template_id) errors.template_id = previewImage;
  await renderForm(req, res, p, done.status, a, { values, errors });
}

/** Only an email of this automation (another's utr, or another account's: 404). */
export async function removeEmailAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const a = await getAutomation(p.ctx, String(req.params.utr));
  const emailUtr = String(req.params.email).toLowerCase();
  const mine = (await listSchedules(p.ctx, p.deps.config, a.utr)).some((e) => e.utr === emailUtr);
  await submitRoute(REMOVE, p, req, res, { query: { utr: mine ? emailUtr : '' } });
  res.redirect(303, `/app/automations/${a.utr}?done=email-removed#sequence`);
}
