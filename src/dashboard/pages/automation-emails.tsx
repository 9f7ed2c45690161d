import type { Request, Response } from 'express';
import { automationRoutes } from '../../resources/automations/automations.router';
import { notFound2, type FieldErrors } from '../../http/errors';
import { getAutomation } from '../../resources/automations/automations.service';
import { listSchedules } from '../../resources/automations/schedules.service';
import { listSenders } from '../../resources/senders/senders.service';
import { templateRoutes } from '../../resources/templates/templates.router';
import type { TemplateRecord } from '../../resources/templates/templates.schemas';
import { SenderVerification } from '../../states';
import { Table } from '../components';
import { emptyForm, Field, submitRoute, type Choice, type FormState } from '../form-kit';
import { PostButton } from '../layout';
import { sendPage, type PageContext } from '../respond';
import { FormPage, posted, routeOf, withNone } from './sender-kit';

/**
 * An automation's emails: the list with their design, sender and wait, adding one (POST
 * /automations/schedule/create), changing one (POST /automations/schedule/update) and removing
 * one (DELETE /automations/schedule/delete). The
 * design is chosen from what GET /get-design/template answers (the built-ins and the account's
 * saved designs), through that route.
 */
const ADD = routeOf(automationRoutes, '/automations/schedule/create');
const UPDATE = routeOf(automationRoutes, '/automations/schedule/update');
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
  preview_img: string;
  template_html: string | null;
  template_json: string | null;
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
  const [rows, senders, list] = await Promise.all([loadEmails(p, utr), listSenders(p.ctx), designs(p, req, res)]);
  return {
    rows,
    senderNames: new Map(senders.rows.map((s) => [s.id, s.nickname])),
    designNames: new Map(list.map((d) => [d.id, d.template_name])),
  };
}
type Sequence = Awaited<ReturnType<typeof loadSequence>>;

/** The emails with what each is sent as, and a remove button each. */
export function SequenceTable({ seq, utr, csrf, edit = true }: { seq: Sequence; utr: string; csrf: string; edit?: boolean }) {
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
          cell: (e) =>
            edit ? (
              <div class="actions">
                <a href={`/app/automations/${utr}/emails/${e.utr}/edit`} aria-label={`Edit: email ${e.position}, ${e.subject}`}>
                  Edit
                </a>
                <PostButton action={`/app/automations/${utr}/emails/${e.utr}/delete`} csrf={csrf} label="Remove" name={`email ${e.position}, ${e.subject}`} />
              </div>
            ) : (
              '–'
            ),
        },
      ]}
    />
  );
}

interface FormOpts {
  title: string;
  action: string;
  submit: string;
  /** The email has HTML or editor JSON of its own (set through the API), kept while its design stays. */
  ownSource?: boolean;
}

const adding = (utr: string): FormOpts => ({ title: 'Add an email', action: `/app/automations/${utr}/emails/new`, submit: 'Add the email' });
const editing = (utr: string, e: Schedule & { position: number }): FormOpts => ({
  title: `Edit email ${e.position}`,
  action: `/app/automations/${utr}/emails/${e.utr}/edit`,
  submit: 'Save the email',
  ownSource: Boolean(e.template_html || e.template_json),
});

async function renderForm(req: Request, res: Response, p: PageContext, status: number, a: { utr: string; automation_name: string }, opts: FormOpts, state: FormState): Promise<void> {
  const [senders, list] = await Promise.all([listSenders(p.ctx), designs(p, req, res)]);
  const senderChoices = senders.rows.map((s) => ({ value: String(s.id), label: senderLabel(s) }));
  const designChoices = list.map((d) => ({ value: String(d.id), label: d.template_name }));
  sendPage(
    res,
    status,
    <FormPage
      heading={opts.title}
      title={`${opts.title}: ${a.automation_name}`}
      active="automations"
      csrf={p.session.csrf}
      back={{ href: `/app/automations/${a.utr}`, label: a.automation_name }}
      state={state}
      fields={FIELDS}
      action={opts.action}
      submit={opts.submit}
    >
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
        <Field
          state={state}
          name="template_id"
          label="Design"
          type="select"
          choices={withNone('Choose a design', designChoices)}
          hint={opts.ownSource ? 'This email has HTML of its own (set through the API): it is kept while this design stays chosen.' : undefined}
          required
        />
        <fieldset>
          <legend>When it goes out</legend>
          <Field state={state} name="waiting_type" label="Wait" type="select" choices={WAITS} hint="After the contact entered (the first email) or after the previous email." required />
          <Field state={state} name="waiting_period" label="How many hours or days" type="number" hint="1 for an email sent right away." required attrs={{ min: 0, step: 1 }} />
        </fieldset>
    </FormPage>,
  );
}

export async function newEmailPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const a = await getAutomation(p.ctx, String(req.params.utr));
  await renderForm(req, res, p, 200, a, adding(a.utr), emptyForm({ waiting_type: 'instantly', waiting_period: '1' }));
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
  if (done.ok) res.redirect(303, `/app/automations/${a.utr}?done=email-added#sequence`);
  else await renderForm(req, res, p, done.status, a, adding(a.utr), { values, errors: onDesign(done.errors) });
}

/** The route's messages on the preview image belong to the design a person chose. */
function onDesign(all: FieldErrors): FieldErrors {
  const { preview_img: previewImage, ...errors } = all;
  if (previewImage && !errors.template_id) errors.template_id = previewImage;
  return errors;
}

/** The automation and one of its emails (another automation's, another account's or a removed one: 404). */
async function emailOf(req: Request, p: PageContext) {
  const a = await getAutomation(p.ctx, String(req.params.utr));
  const emailUtr = String(req.params.email).toLowerCase();
  const e = (await loadEmails(p, a.utr)).find((x) => x.utr === emailUtr);
  if (!e) throw notFound2();
  return { a, e };
}

const loadEmails = async (p: PageContext, utr: string) => ((await listSchedules(p.ctx, p.deps.config, utr)) as Schedule[]).map((e, i) => ({ ...e, position: i + 1 }));

export async function editEmailPage(req: Request, res: Response, p: PageContext): Promise<void> {
  const { a, e } = await emailOf(req, p);
  const values = { subject: e.subject, sender_id: e.sender_id, template_id: e.template_id, waiting_type: e.waiting_type, waiting_period: e.waiting_period };
  await renderForm(req, res, p, 200, a, editing(a.utr, e), emptyForm(values));
}

/**
 * Every field again (the route's rule). The email's own HTML or editor JSON and its preview
 * image go with it while its design stays; another design brings that design's image and
 * nothing of its own.
 */
export async function updateEmailAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const { a, e } = await emailOf(req, p);
  const values = posted(req);
  const sameDesign = String(values.template_id ?? '') === String(e.template_id);
  const design = (await designs(p, req, res)).find((d) => String(d.id) === String(values.template_id ?? ''));
  const kept = sameDesign ? { preview_img: e.preview_img, template_html: e.template_html ?? undefined, template_json: e.template_json ?? undefined } : { preview_img: design?.preview_image };
  const done = await submitRoute(UPDATE, p, req, res, { body: { ...values, ...kept }, query: { utr: e.utr } });
  if (done.ok) res.redirect(303, `/app/automations/${a.utr}?done=email-updated#sequence`);
  else await renderForm(req, res, p, done.status, a, editing(a.utr, e), { values, errors: onDesign(done.errors) });
}

/** Only an email of this automation (another's utr, or another account's: 404). */
export async function removeEmailAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const { a, e } = await emailOf(req, p);
  await submitRoute(REMOVE, p, req, res, { query: { utr: e.utr } });
  res.redirect(303, `/app/automations/${a.utr}?done=email-removed#sequence`);
}
