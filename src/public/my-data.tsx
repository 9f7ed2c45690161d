import { createHash, randomBytes } from 'node:crypto';
import express, { type Express, type Request, type Response } from 'express';
import type { Knex } from 'knex';
import type { Deps } from '../context';
import { Heading, Note, pageErrors, PostForm, PrimaryButton, sendRecipientMessage, sendRecipientPage, Text } from '../dashboard/recipient';
import { recordAccountEvent } from '../events/account-events';
import { escapeHtml } from '../mail/escape-html';
import { sendSystemMail, systemMailHtml } from '../mail/system-mail';
import { eraseAddress } from '../resources/contacts/erase.service';
import { exportPerson } from '../resources/contacts/person.service';
import { resolveMessage, type MessageContext } from './unsubscribe';

/**
 * A recipient's own data, from the preferences page (issue 35; docs/decisions.md "Consent and
 * personal data"). The unsubscribe link's token is the credential, as for the preferences.
 *
 * - "Get my data" (POST) mails a one-time link to the address: `/my-data/<account>.<random>`, kept
 *   as the random part's SHA-256 in `data_requests`, valid MY_DATA_TTL_HOURS. Opening it (GET) shows
 *   a page with a Download button; only that POST hands out the export (JSON, as an attachment) and
 *   spends the link, so a mail scanner that fetches every link spends nothing.
 * - "Forget me" (GET) shows a confirmation page; only its POST erases the address (the same
 *   erasure as POST /contacts/erase, by `recipient`).
 *
 * Both are account events: `contact.data_requested` when the link is mailed, `contact.erased`.
 * Neither names the address.
 */
export const MY_DATA_TTL_HOURS = 24;
const TOKEN = /^([1-9]\d{0,9})\.([A-Za-z0-9_-]{43})$/;
const sha256 = (s: string) => createHash('sha256').update(s).digest();

async function openRequest(db: Knex, m: MessageContext): Promise<string> {
  const secret = randomBytes(32).toString('base64url');
  await db.transaction(async (trx) => {
    await trx('data_requests').insert({
      user_id: m.userId,
      token_hash: sha256(secret),
      email: m.email,
      expires_at: trx.raw(`now() + make_interval(hours => ?)`, [MY_DATA_TTL_HOURS]),
    });
    await recordAccountEvent({ db: trx }, m.userId, 'contact.data_requested', 'A recipient asked for their data', { delivery_id: m.deliveryId });
  });
  return `${m.userId}.${secret}`;
}

/** The request a link names, if it is still usable (unused, not expired). */
async function findRequest(db: Knex, token: string): Promise<{ userId: number; hash: Buffer; email: string } | undefined> {
  const t = TOKEN.exec(token);
  if (!t || Number(t[1]) > 2_147_483_647) return undefined;
  const key = { user_id: Number(t[1]), token_hash: sha256(t[2]) };
  const row = (await db('data_requests').where(key).whereNull('used_at').where('expires_at', '>', db.fn.now()).first('email')) as { email: string } | undefined;
  return row && { userId: key.user_id, hash: key.token_hash, email: row.email };
}

const gone = (res: Response) =>
  sendRecipientMessage(res, 410, 'Link expired or used', 'This link has expired or was already used. Ask for your data again from the preferences page of any message.');

export function mountMyData(app: Express, deps: Deps): void {
  const form = express.urlencoded({ extended: false, limit: '4kb', parameterLimit: 10 });
  const load = async (req: Request, res: Response): Promise<MessageContext | undefined> => {
    const m = await resolveMessage(deps.db, String(req.params.token));
    if (!m) sendRecipientMessage(res, 404, 'Link not recognised', 'This link is invalid or no longer works.');
    return m;
  };

  app.post('/unsubscribe/:token/my-data', form, pageErrors(async (req, res) => {
    const m = await load(req, res);
    if (!m) return;
    const link = `${deps.config.publicUrl}/my-data/${await openRequest(deps.db, m)}`;
    const html = systemMailHtml('Your data', [
      `You asked for a copy of the data held about ${escapeHtml(m.email)}.`,
      `<a href="${escapeHtml(link)}">Download your data</a> (the link works once, for ${MY_DATA_TTL_HOURS} hours).`,
      'If you did not ask for it, ignore this message.',
    ]);
    await sendSystemMail(deps, { to: { email: m.email }, subject: 'Your data', html, link });
    sendRecipientMessage(res, 200, 'Check your inbox', `We sent a link to ${m.email}. It works once, for ${MY_DATA_TTL_HOURS} hours.`);
  }));

  app.get('/my-data/:token', pageErrors(async (req, res) => {
    const token = String(req.params.token);
    if (!(await findRequest(deps.db, token))) return gone(res);
    sendRecipientPage(res, 200, {
      title: 'Your data',
      body: (
        <>
          <Heading>Your data</Heading>
          <Text>Download everything this sender holds about your address, as one JSON file.</Text>
          <PostForm action={`/my-data/${token}`}>
            <PrimaryButton>Download my data</PrimaryButton>
          </PostForm>
          <Note>The link works once.</Note>
        </>
      ),
    });
  }));

  app.post('/my-data/:token', form, pageErrors(async (req, res) => {
    const request = await findRequest(deps.db, String(req.params.token));
    if (!request) return gone(res);
    const spent = await deps.db('data_requests').where({ user_id: request.userId, token_hash: request.hash }).whereNull('used_at').update({ used_at: deps.db.fn.now() });
    if (spent !== 1) return gone(res);
    const person = await exportPerson({ userId: request.userId, db: deps.db }, request.email);
    res.status(200).set('Cache-Control', 'no-store').type('application/json').attachment('my-data.json').send(JSON.stringify(person, null, 2));
  }));

  app.get('/unsubscribe/:token/forget', pageErrors(async (req, res) => {
    const m = await load(req, res);
    if (!m) return;
    sendRecipientPage(res, 200, {
      title: 'Forget me',
      body: (
        <>
          <Heading>Forget me</Heading>
          <Text>
            Erase <strong>{m.email}</strong> and everything this sender holds about it: your subscriptions, your details and the record of
            the messages you were sent. Only a scrambled fingerprint of the address stays, so that you are never mailed again.
          </Text>
          <PostForm action={`/unsubscribe/${String(req.params.token).toLowerCase()}/forget`}>
            <PrimaryButton>Erase my data</PrimaryButton>
          </PostForm>
          <Note>This cannot be undone.</Note>
        </>
      ),
    });
  }));

  app.post('/unsubscribe/:token/forget', form, pageErrors(async (req, res) => {
    const m = await load(req, res);
    if (!m) return;
    await eraseAddress({ userId: m.userId, db: deps.db }, m.email, { actor: 'recipient', source: 'recipient' });
    sendRecipientMessage(res, 200, 'Your data is erased', 'This sender no longer holds your address or anything about it, and will not mail you again.');
  }));
}
