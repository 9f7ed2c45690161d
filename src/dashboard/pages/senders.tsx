import { allowed, guarded } from '../permissions';
import type { Permission } from '../../team/permissions';
import type { Request, Response } from 'express';
import { AppError, type FieldErrors } from '../../http/errors';
import { senderRoutes } from '../../resources/senders/senders.router';
import { listSenders } from '../../resources/senders/senders.service';
import type { SenderRecord } from '../../resources/senders/senders.schemas';
import type { GroupRecord } from '../../resources/unsubscribe-groups/unsubscribe-groups.schemas';
import { listGroups } from '../../resources/unsubscribe-groups/unsubscribe-groups.service';
import { SenderVerification } from '../../states';
import { Section, Table } from '../components';
import { FORM_ERROR, submitRoute } from '../form-kit';
import { count, when } from '../format';
import { Layout, PostButton } from '../layout';
import { errorLines, page, sendPage, type DashboardKit, type PageContext } from '../respond';
import { newSenderPage, editSenderPage, placesJson, saveSenderAction, updateSenderAction } from './sender-form';
import { deleteGroupAction, editGroupPage, newGroupPage, saveGroupAction, updateGroupAction } from './sender-groups';
import { Flash, Refusal, routeOf } from './sender-kit';

/**
 * Senders and unsubscribe groups: the account's senders with their verification, the forms that
 * add and change them (sender-form.tsx), "resend the verification mail", and the groups
 * (sender-groups.tsx). Each action runs the API route that does the same (form-kit.tsx).
 * The DNS records of each sender's domain are on the Deliverability page, linked from here.
 */
const RESEND = routeOf(senderRoutes, '/sender/resend-mail');
const DELETE = routeOf(senderRoutes, '/sender/delete');

type Group = GroupRecord & { unsubscribe_clients_count: number };

const DONE: Record<string, string> = {
  added: 'The sender was added. A verification link went to its from address.',
  updated: 'The sender was saved.',
  deleted: 'The sender was deleted.',
  mailed: 'A new verification link went to the sender’s from address.',
  'group-added': 'The unsubscribe group was added.',
  'group-updated': 'The unsubscribe group was saved.',
  'group-deleted': 'The unsubscribe group was deleted.',
};

function Verification({ s, tz }: { s: SenderRecord; tz: string }) {
  if (s.is_verified === SenderVerification.Verified) return <span class="status verified">Verified</span>;
  return (
    <span class="status unverified">
      Not verified: {s.send_at ? <>link mailed {when(s.send_at.replace(' ', 'T') + 'Z', tz)}</> : 'no link went out yet'}
    </span>
  );
}

function SenderActions({ s, csrf, manage }: { s: SenderRecord; csrf: string; manage: boolean }) {
  return (
    <div class="actions">
      {manage ? (
        <a href={`/app/senders/${s.id}/edit`} aria-label={`Edit: ${s.nickname}`}>
          Edit
        </a>
      ) : null}
      <a href={`/app/deliverability#sender-${s.id}`} aria-label={`DNS records: ${s.nickname}`}>
        DNS records
      </a>
      {manage ? <PostButton action={`/app/senders/${s.id}/resend`} csrf={csrf} label="Resend verification mail" name={s.nickname} /> : null}
      {manage ? <PostButton action={`/app/senders/${s.id}/delete`} csrf={csrf} label="Delete" name={s.nickname} /> : null}
    </div>
  );
}

/** The page, with a refused action's messages at its top (status: the refusal's). */
async function renderSenders(req: Request, res: Response, p: PageContext, status: number, refusal?: FieldErrors): Promise<void> {
  const [senders, groups] = await Promise.all([listSenders(p.ctx), listGroups(p.ctx)]);
  const csrf = p.session.csrf;
  const manage = allowed(p, 'settings:manage');
  sendPage(
    res,
    status,
    <Layout title="Senders" csrf={csrf} active="senders" styles={['settings.css']}>
      <h1>Senders and unsubscribe groups</h1>
      {refusal ? null : <Flash req={req} texts={DONE} />}
      <Refusal errors={refusal} />
      <Section title="Senders" id="senders">
        <p class="muted">
          A sender can be used once the link mailed to its from address was opened. The DNS records to publish for each sender’s domain are on the{' '}
          <a href="/app/deliverability">Deliverability</a> page.
        </p>
        {manage ? (
          <p>
            <a class="button" href="/app/senders/new">
              Add a sender
            </a>
          </p>
        ) : null}
        <Table<SenderRecord>
          name="senders"
          caption="The account’s senders, newest first"
          rows={senders.rows}
          empty="No senders yet."
          columns={[
            { label: 'Sender', cell: (s) => (manage ? <a href={`/app/senders/${s.id}/edit`}>{s.nickname}</a> : s.nickname) },
            { label: 'From', cell: (s) => `${s.from_name} <${s.from_email}>` },
            { label: 'Reply to', cell: (s) => s.reply_to_email },
            { label: 'Verification', cell: (s) => <Verification s={s} tz={p.tz} /> },
            { label: 'Actions', cell: (s) => <SenderActions s={s} csrf={csrf} manage={manage} /> },
          ]}
        />
      </Section>
      <Section title="Unsubscribe groups" id="groups">
        <p class="muted">Every send and automation names the group its unsubscribe link leaves. Groups shown on the preferences page can be left one by one.</p>
        {manage ? (
          <p>
            <a class="button" href="/app/senders/groups/new">
              Add a group
            </a>
          </p>
        ) : null}
        <Table<Group>
          name="groups"
          caption="The account’s unsubscribe groups, newest first"
          rows={groups.rows as unknown as Group[]}
          empty="No unsubscribe groups yet."
          columns={[
            { label: 'Group', cell: (g) => (manage ? <a href={`/app/senders/groups/${g.id}/edit`}>{g.group_name}</a> : g.group_name) },
            { label: 'Description', cell: (g) => g.description },
            { label: 'On the preferences page', cell: (g) => (g.is_display ? 'shown' : 'hidden') },
            { label: 'Addresses', numeric: true, cell: (g) => count(g.unsubscribe_clients_count) },
            {
              label: 'Actions',
              cell: (g) =>
                !manage ? (
                  '–'
                ) : (
                  <div class="actions">
                    <a href={`/app/senders/groups/${g.id}/edit`} aria-label={`Edit: ${g.group_name}`}>
                      Edit
                    </a>
                    <PostButton action={`/app/senders/groups/${g.id}/delete`} csrf={csrf} label="Delete" name={g.group_name} />
                  </div>
                ),
            },
          ]}
        />
      </Section>
    </Layout>,
  );
}

const sendersPage = (req: Request, res: Response, p: PageContext) => renderSenders(req, res, p, 200);

/**
 * A new link for the sender (GET /sender/resend-mail). When the mail server does not take it the
 * API answers 503 with Retry-After: here that is a message on the page, with the same status and
 * header, not an error page.
 */
async function resendAction(req: Request, res: Response, p: PageContext): Promise<void> {
  try {
    const done = await submitRoute(RESEND, p, req, res, { query: { sender_id: req.params.id } });
    if (done.ok) res.redirect(303, '/app/senders?done=mailed');
    else await renderSenders(req, res, p, done.status, done.errors);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 503) throw err;
    res.set(err.headers);
    await renderSenders(req, res, p, 503, { [FORM_ERROR]: errorLines(err.errors) });
  }
}

/** DELETE /sender/delete: refused while a send or an automation email uses the sender (the API's words on the page). */
async function deleteAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const done = await submitRoute(DELETE, p, req, res, { query: { sender_id: req.params.id } });
  if (done.ok) res.redirect(303, '/app/senders?done=deleted');
  else await renderSenders(req, res, p, done.status, done.errors);
}

/** Senders and unsubscribe groups (src/dashboard/index.tsx mounts each area). */
export function mountSenderPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  const g = guarded(r, signedIn);
  const post = (path: string, permission: Permission, handler: Parameters<typeof page>[0]) => g.post(path, permission, form, requireCsrf, page(handler, 'senders'));
  g.get('/senders', 'read', page(sendersPage, 'senders'));
  g.get('/senders/places.json', 'read', placesJson);
  g.get('/senders/new', 'settings:manage', page(newSenderPage, 'senders'));
  post('/senders/new', 'settings:manage', saveSenderAction);
  g.get('/senders/groups/new', 'settings:manage', page(newGroupPage, 'senders'));
  post('/senders/groups/new', 'settings:manage', saveGroupAction);
  g.get('/senders/groups/:id/edit', 'settings:manage', page(editGroupPage, 'senders'));
  post('/senders/groups/:id/edit', 'settings:manage', updateGroupAction);
  post('/senders/groups/:id/delete', 'settings:manage', deleteGroupAction);
  g.get('/senders/:id/edit', 'settings:manage', page(editSenderPage, 'senders'));
  post('/senders/:id/edit', 'settings:manage', updateSenderAction);
  post('/senders/:id/resend', 'settings:manage', resendAction);
  post('/senders/:id/delete', 'settings:manage', deleteAction);
}
