import fs from 'node:fs';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import type { Deps } from '../context';
import { secret } from '../db/secrets';
import { onCitus } from '../db/per-account';
import { cachedPublicForm, loadPublicForm, type PublicForm } from '../forms/forms';
import { queueConfirmationMail } from '../forms/optin-mail';
import { isExpired, readOptinToken, type OptinRef } from '../forms/optin-token';
import { findPending, takeMailTurn } from '../forms/pending';
import { readFormPublicId } from '../forms/public-id';
import { countClientSubmission, newChallenge, spendSolution } from '../forms/subscribe-guards';
import { failed, ok } from '../http/envelope';
import type { FieldErrors } from '../http/errors';
import {
  Checkbox,
  ChoiceList,
  Heading,
  pageErrors,
  PostForm,
  PrimaryButton,
  recipientHeaders,
  sendRecipientMessage,
  sendRecipientPage,
  Text,
  TextField,
} from '../dashboard/recipient';
import { confirm, readSubmission, submit, type Client } from './subscribe-service';

/**
 * The public subscribe endpoint and double opt-in (issue 35), without API keys: the form's
 * public id, and the confirmation link's token, name the account (one node on Citus).
 *
 * - `GET /subscribe/<public id>`: the hosted form. `POST` the same: form-encoded (the hosted page,
 *   or the snippet on any site: a page, or 303 to the form's success_url) or JSON
 *   (`Accept: application/json`: the envelope; CORS open to every origin, see below).
 * - `GET /subscribe/<public id>/challenge`: a proof-of-work challenge for the widget.
 * - `GET /subscribe/confirm/<token>`: a page with a Confirm button — a GET confirms nothing (mail
 *   scanners fetch every link); `POST` the same confirms. `POST /subscribe/resend/<token>`: a new
 *   mail for an expired or superseded link.
 * - `/app/assets/altcha*.{js,css}`: the ALTCHA widget, its worker and style, from this origin.
 *
 * Every answer to a valid submission is the same whatever became of it (pending, already a
 * contact, suppressed, or a filled honeypot): the mail is queued for the worker, never sent here.
 */
const PUBLIC_ID = /^[0-9a-fA-F]{48}$/;
const TOKEN = /^[0-9a-fA-F]{72}$/;
const HONEYPOT = 'website';
const CHECK_INBOX = 'Please check your inbox';
const CHECK_INBOX_TEXT = 'We sent you a mail with a link to confirm your subscription. It may take a few minutes to arrive.';
const THANKS = 'Thank you for subscribing';

/**
 * The JSON endpoint answers every origin (`*`, never with credentials): it uses no cookie or
 * other ambient authority, so a page on another origin reading its answer learns nothing a
 * direct request would not. The per-address limit and proof of work hold the same.
 */
const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'POST, GET',
  'Access-Control-Allow-Headers': 'Content-Type, Accept',
  'Access-Control-Max-Age': '600',
};

function client(req: Request): Client {
  return { ip: req.ip ?? req.socket.remoteAddress ?? null, userAgent: req.get('User-Agent') ?? null };
}

const wantsJson = (req: Request) => /application\/json/i.test(req.get('Accept') ?? '') || Boolean(req.is('application/json'));

/**
 * The form a public id names. `cached`: for a submission, a copy this process read within
 * PUBLIC_FORM_CACHE_MS (cachedPublicForm: a double opt-in submission checks it against the form
 * in its statement; `fresh` reads it again after such a check failed); on Citus always read.
 */
async function formOf(db: Knex, id: string, read: 'load' | 'cached' | 'fresh' = 'load'): Promise<PublicForm | undefined> {
  if (!PUBLIC_ID.test(id)) return undefined;
  const ref = readFormPublicId(await secret(db, 'tracking'), id);
  const form = ref && (read === 'load' || (await onCitus(db)) ? await loadPublicForm(db, ref) : await cachedPublicForm(db, ref, read === 'fresh'));
  return form && form.lists.length ? form : undefined;
}

function formNotFound(req: Request, res: Response): void {
  if (wantsJson(req)) res.status(404).set(CORS).json(failed('Record Not Found'));
  else sendRecipientMessage(res, 404, 'Form not found', 'This signup form does not exist or was removed.');
}

/** The widget's files: a module of ours that loads the widget and gives it its worker, both from this origin. */
// The package exports its style sheet's path; the widget and the worker are beside it, in dist/.
const ALTCHA_DIR = require.resolve('altcha/altcha.css').replace(/external[\\/]altcha\.css$/, '');
const ALTCHA_LOADER = `import './altcha-widget.js';
const worker = new URL('./altcha-sha.js', import.meta.url);
// A page of another origin cannot start a worker from this one: it gets the same code as a blob.
const sameOrigin = worker.origin === location.origin;
const code = sameOrigin ? null : fetch(worker).then((r) => r.blob()).then((b) => URL.createObjectURL(b));
globalThis.$altcha.algorithms.set('SHA-256', async () => new Worker(sameOrigin ? worker : await code));
`;
const ASSETS: Record<string, { file?: string; text?: string; type: string }> = {
  'altcha.js': { text: ALTCHA_LOADER, type: 'text/javascript' },
  'altcha-widget.js': { file: `${ALTCHA_DIR}external/altcha.min.js`, type: 'text/javascript' },
  'altcha-sha.js': { file: `${ALTCHA_DIR}workers/sha.js`, type: 'text/javascript' },
  'altcha.css': { file: `${ALTCHA_DIR}external/altcha.css`, type: 'text/css' },
};

function FormPage({ form, values = {}, errors = {} }: { form: PublicForm; values?: Record<string, unknown>; errors?: FieldErrors }) {
  const value = (name: string) => {
    const v = name.startsWith('custom_field[') ? (values.custom_field as Record<string, unknown> | undefined)?.[name.slice(13, -1)] : values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const chosen = new Set((Array.isArray(values.contact_type_ids) ? values.contact_type_ids : [values.contact_type_ids]).map(String));
  const first = (name: string) => errors[name]?.[0];
  return (
    <>
      <Heading>{form.name}</Heading>
      {form.captcha === 'proof_of_work' ? <link rel="stylesheet" href="/app/assets/altcha.css" /> : null}
      <PostForm action={`/subscribe/${form.id}`}>
        {form.fields.map((f) => (
          <TextField
            name={f.inputName}
            label={f.label}
            type={f.name === 'email' ? 'email' : f.type === 'number' ? 'number' : 'text'}
            required={f.required}
            value={value(f.inputName)}
            error={first(f.inputName)}
            autoComplete={f.name === 'email' ? 'email' : f.name === 'first_name' ? 'given-name' : f.name === 'last_name' ? 'family-name' : undefined}
          />
        ))}
        {form.lists.length > 1 ? (
          <>
            <ChoiceList
              legend="Lists"
              name="contact_type_ids[]"
              choices={form.lists.map((l) => ({ value: String(l.id), label: l.name, checked: chosen.has(String(l.id)) }))}
            />
            {first('contact_type_ids') ? <p class="error">{first('contact_type_ids')}</p> : null}
          </>
        ) : null}
        <Checkbox name="consent" label={form.consentText} required checked={values.consent !== undefined && !errors.consent} />
        {first('consent') ? <p class="error">{first('consent')}</p> : null}
        <div hidden aria-hidden="true">
          <label for="field-website">Leave this field empty</label>
          <input id="field-website" type="text" name={HONEYPOT} tabIndex={-1} autoComplete="off" />
        </div>
        {form.captcha === 'proof_of_work' ? (
          <>
            <altcha-widget challenge={`/subscribe/${form.id}/challenge`} name="altcha" />
            {first('altcha') ? <p class="error">{first('altcha')}</p> : null}
          </>
        ) : null}
        <PrimaryButton>Subscribe</PrimaryButton>
      </PostForm>
    </>
  );
}

declare module 'preact' {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace JSX {
    interface IntrinsicElements {
      'altcha-widget': { challenge: string; name: string };
    }
  }
}

function sendForm(res: Response, status: number, form: PublicForm, values?: Record<string, unknown>, errors?: FieldErrors): void {
  sendRecipientPage(res, status, {
    title: form.name,
    body: <FormPage form={form} values={values} errors={errors} />,
    formAction: form.successUrl ? [new URL(form.successUrl).origin] : [],
    scripts: form.captcha === 'proof_of_work' ? ['altcha.js'] : [],
  });
}

/** The answer to an accepted submission: the same for every outcome. */
function accepted(req: Request, res: Response, form: PublicForm): void {
  const text = form.doubleOptIn ? `${CHECK_INBOX}. ${CHECK_INBOX_TEXT}` : `${THANKS}.`;
  if (wantsJson(req)) {
    res.status(200).set(CORS).json(ok(text));
  } else if (form.successUrl) {
    res.status(303).set(recipientHeaders({ formAction: [new URL(form.successUrl).origin] })).location(form.successUrl).end();
  } else if (form.doubleOptIn) {
    sendRecipientMessage(res, 200, CHECK_INBOX, CHECK_INBOX_TEXT);
  } else {
    sendRecipientMessage(res, 200, THANKS, 'You are now subscribed.');
  }
}

function invalid(req: Request, res: Response, form: PublicForm, body: Record<string, unknown>, errors: FieldErrors): void {
  if (wantsJson(req)) res.status(422).set(CORS).json(failed(errors));
  else sendForm(res, 422, form, body, errors);
}

function tooMany(req: Request, res: Response, retryAfter: number): void {
  res.set('Retry-After', String(retryAfter));
  if (wantsJson(req)) res.status(429).set(CORS).json(failed('Too Many Requests'));
  else sendRecipientMessage(res, 429, 'Too many attempts', 'Please try again later.');
}

/** Reads a link's token: what it names, or a page saying the link is not one of ours (404). */
async function tokenOf(db: Knex, res: Response, raw: string): Promise<OptinRef | undefined> {
  const ref = TOKEN.test(raw) ? readOptinToken(await secret(db, 'tracking'), raw) : undefined;
  if (!ref) sendRecipientMessage(res, 404, 'Invalid link', 'This confirmation link is not valid. Please check that you opened the whole link from the mail.');
  return ref;
}

function ResendForm({ token }: { token: string }) {
  return (
    <PostForm action={`/subscribe/resend/${token}`}>
      <PrimaryButton>Send me a new confirmation mail</PrimaryButton>
    </PostForm>
  );
}

/** The page of a link that cannot confirm: expired (or superseded) with a new mail offered, or used. */
function sendCannotConfirm(res: Response, token: string, used: boolean): void {
  if (used) {
    sendRecipientMessage(res, 410, 'Already confirmed', 'This link was used already: your subscription is confirmed. There is nothing more to do.');
    return;
  }
  sendRecipientPage(res, 410, {
    title: 'This link has expired',
    body: (
      <>
        <Heading>This link has expired</Heading>
        <Text>Confirmation links work for a limited time. We can send you a new one.</Text>
        <ResendForm token={token} />
      </>
    ),
  });
}

export function mountSubscribe(app: Express, deps: Deps): void {
  const { db, config } = deps;
  const parse = [express.urlencoded({ extended: true, limit: '32kb', parameterLimit: 200 }), express.json({ limit: '32kb' })];

  // Static files beside the dashboard's own (/app/assets), not API operations: a router of their
  // own, as the dashboard's assets are, so the OpenAPI document does not list them.
  const assets = express.Router();
  for (const [name, asset] of Object.entries(ASSETS)) {
    const body = asset.text ?? fs.readFileSync(asset.file!);
    assets.get(`/${name}`, (_req, res) => {
      res.set({ 'Content-Type': `${asset.type}; charset=utf-8`, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=3600', 'Access-Control-Allow-Origin': '*' });
      res.send(body);
    });
  }
  app.use('/app/assets', assets);

  app.options(['/subscribe/:id', '/subscribe/:id/challenge'], (_req, res) => {
    res.status(204).set(CORS).end();
  });

  app.get(
    '/subscribe/:id/challenge',
    pageErrors(async (req, res) => {
      const form = await formOf(db, String(req.params.id));
      if (!form || form.captcha !== 'proof_of_work') return void res.status(404).set(CORS).json(failed('Record Not Found'));
      res.status(200).set({ ...CORS, 'Cache-Control': 'no-store' }).json(await newChallenge(db));
    }),
  );

  app.get(
    '/subscribe/confirm/:token',
    pageErrors(async (req, res) => {
      const token = String(req.params.token);
      const ref = await tokenOf(db, res, token);
      if (!ref) return;
      const pending = await findPending(db, ref.userId, ref.pendingId);
      const form = pending && (await loadPublicForm(db, { userId: ref.userId, formId: pending.form_id }));
      if (!pending || !form) return sendRecipientMessage(res, 404, 'Invalid link', 'This subscription is no longer waiting for a confirmation. Please subscribe again.');
      if (pending.confirmed_at && pending.generation === ref.generation) return sendCannotConfirm(res, token, true);
      if (isExpired(ref) || pending.generation !== ref.generation) return sendCannotConfirm(res, token, false);
      sendRecipientPage(res, 200, {
        title: 'Confirm your subscription',
        // The POST answers with a redirect to confirm_url: Chromium applies form-action to it too.
        formAction: form.confirmUrl ? [new URL(form.confirmUrl).origin] : [],
        body: (
          <>
            <Heading>Confirm your subscription</Heading>
            <Text>Press the button to confirm that {pending.email} should get these mails.</Text>
            <PostForm action={`/subscribe/confirm/${token}`}>
              <PrimaryButton>Confirm</PrimaryButton>
            </PostForm>
          </>
        ),
      });
    }),
  );

  app.post(
    '/subscribe/confirm/:token',
    ...parse,
    pageErrors(async (req, res) => {
      const token = String(req.params.token);
      const ref = await tokenOf(db, res, token);
      if (!ref) return;
      const pending = await findPending(db, ref.userId, ref.pendingId);
      const form = pending && (await loadPublicForm(db, { userId: ref.userId, formId: pending.form_id }));
      if (!pending || !form) return sendRecipientMessage(res, 404, 'Invalid link', 'This subscription is no longer waiting for a confirmation. Please subscribe again.');
      if (isExpired(ref)) return sendCannotConfirm(res, token, false);
      const row = await confirm(db, form, ref, client(req));
      if (!row) return sendCannotConfirm(res, token, pending.generation === ref.generation);
      if (form.confirmUrl) {
        res.status(303).set(recipientHeaders({ formAction: [new URL(form.confirmUrl).origin] })).location(form.confirmUrl).end();
        return;
      }
      sendRecipientMessage(res, 200, 'Subscription confirmed', `Thank you: ${row.email} is now subscribed to ${form.name}.`);
    }),
  );

  app.post(
    '/subscribe/resend/:token',
    ...parse,
    pageErrors(async (req, res) => {
      const ref = await tokenOf(db, res, String(req.params.token));
      if (!ref) return;
      const limit = await countClientSubmission(db, client(req).ip ?? 'unknown', config.subscribeLimitPerHour);
      if (!limit.ok) return tooMany(req, res, limit.retryAfter);
      // Queued when the subscription still waits and was not mailed within the last minutes; the page is the same either way.
      await db.transaction(async (trx) => {
        if (await takeMailTurn(trx, ref.userId, ref.pendingId)) await queueConfirmationMail(trx, ref.userId, ref.pendingId);
      });
      sendRecipientMessage(res, 200, CHECK_INBOX, 'If your subscription is still waiting for its confirmation, a new mail is on its way.');
    }),
  );

  app.get(
    '/subscribe/:id',
    pageErrors(async (req, res) => {
      const form = await formOf(db, String(req.params.id));
      if (!form) return formNotFound(req, res);
      sendForm(res, 200, form);
    }),
  );

  app.post(
    '/subscribe/:id',
    ...parse,
    (_err: unknown, req: Request, res: Response, _next: NextFunction) => {
      // A body that is not JSON or too large: the form's answer for a bad request, never the API's 500.
      if (wantsJson(req)) res.status(400).set(CORS).json(failed('The request body could not be read.'));
      else sendRecipientMessage(res, 400, 'Bad request', 'The form could not be read.');
    },
    pageErrors(async (req, res) => {
      // First a copy of the form read within the last seconds; read again when the submission cannot use it.
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const form = await formOf(db, String(req.params.id), attempt === 0 ? 'cached' : 'fresh');
        if (!form) return formNotFound(req, res);
        if ((await submission(req, res, form, attempt === 0)) !== 'stale') return;
      }
      throw new Error('the form changed during each of three attempts of a submission');
    }),
  );

  /**
   * A submission to `form`: answered, or `stale` (nothing written or answered) when the form
   * changed since it was read, or — `cached`, a copy read before — when this submission is not a
   * valid double opt-in one, the only kind whose statement checks the copy (cachedPublicForm).
   */
  async function submission(req: Request, res: Response, form: PublicForm, cached: boolean): Promise<'stale' | undefined> {
    const who = client(req);
    const address = who.ip ?? 'unknown';
    const body = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>;
    const honeypot = body[HONEYPOT];
    const read = readSubmission(form, body);
    // A valid submission without proof of work: its address is counted in submit's transaction
    // (one commit). Every other request is counted first, on its own, as before.
    if (read.ok && (honeypot === undefined || honeypot === '') && form.captcha !== 'proof_of_work' && (form.doubleOptIn || !cached)) {
      const done = await submit(db, form, read.submission, who, { address, perHour: config.subscribeLimitPerHour });
      if (done === 'stale') return done;
      if (typeof done === 'object') return void tooMany(req, res, done.retryAfter);
      return void accepted(req, res, form);
    }
    if (cached) return 'stale';
    const limit = await countClientSubmission(db, address, config.subscribeLimitPerHour);
    if (!limit.ok) return void tooMany(req, res, limit.retryAfter);
    // A filled honeypot: a bot. Accepted, answered like anyone, and dropped.
    if (honeypot !== undefined && honeypot !== '') return void accepted(req, res, form);
    const errors: FieldErrors = read.ok ? {} : read.errors;
    if (form.captcha === 'proof_of_work') {
      if (body.altcha === undefined || body.altcha === '') errors.altcha = ['The altcha field is required.'];
      else if (Object.keys(errors).length === 0 && !(await spendSolution(db, body.altcha))) errors.altcha = ['The proof of work is invalid or was used already.'];
    }
    if (!read.ok || Object.keys(errors).length) return void invalid(req, res, form, body, errors);
    if ((await submit(db, form, read.submission, who)) === 'stale') return 'stale';
    return void accepted(req, res, form);
  }
}
