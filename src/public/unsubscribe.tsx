import express, { type Express, type Request, type Response } from 'express';
import type { ComponentChildren } from 'preact';
import type { Knex } from 'knex';
import multer from 'multer';
import type { Deps } from '../context';
import { recordMessageEvents } from '../events/record';
import { rowOfToken, markUnsubscribed } from '../deliveries/rows';
import { OWNERS, ownerOf, SOURCE_REF_COLUMNS, sourceRef, type SourceRef, type SourceRefColumns } from '../sources';
import { GroupDisplay } from '../states';
import { resubscribeGlobally, resubscribeToGroup, unsubscribeFromGroup, unsubscribeGlobally } from '../suppression';
import { PrivacyLinks } from './privacy-links';
import { Checkbox, ChoiceList, Heading, Hidden, Notice, pageErrors, PostForm, PrimaryButton, sendRecipientMessage, sendRecipientPage, Text } from '../dashboard/recipient';

/**
 * The unsubscribe preferences page (GET), its form (POST) and RFC 8058 one-click (POST with
 * `List-Unsubscribe=One-Click`). No API keys: the token in the link is the credential.
 */
export interface MessageContext {
  deliveryId: number;
  userId: number;
  email: string;
  groupId: number | null;
  /** Whose message it was (its send or automation, and an A/B send's variation: src/sources). */
  source: SourceRef;
  unsubscribedAt: string | null;
}

/** Where a message came from, by its token: whose, to whom, and the group it was sent under. */
export type ContextResolver = (db: Knex, token: string) => Promise<MessageContext | undefined>;

/** The recipient row's columns a message's context is made from. */
type MessageRow = SourceRefColumns & { id: number; user_id: number; email: string; unsubscribed_at: string | null };

export const resolveMessage: ContextResolver = async (db, token) => {
  const row = await rowOfToken<MessageRow>(db, token, ['id', 'user_id', 'email', ...SOURCE_REF_COLUMNS, 'unsubscribed_at']);
  if (!row) return undefined;
  // The group of its send or automation, read with the account as a value (one node's read on Citus).
  const source = sourceRef(row);
  const owner = ownerOf(source);
  const group = owner && (await db(OWNERS[owner.kind].table).where({ id: owner.id, user_id: row.user_id }).first('unsubscribe_group_id'));
  return {
    deliveryId: row.id,
    userId: row.user_id,
    email: row.email,
    groupId: group?.unsubscribe_group_id ?? null,
    source,
    unsubscribedAt: row.unsubscribed_at,
  };
};

interface GroupState {
  id: number;
  group_name: string;
  description: string;
  subscribed: boolean;
}

/** The message's own group (even if hidden) and every displayed group of the account. */
async function groupsFor(db: Knex, m: MessageContext): Promise<{ groups: GroupState[]; all: boolean }> {
  const groups = (await db('unsubscribe_groups as g')
    .where('g.user_id', m.userId)
    .where((q) => {
      q.where((live) => live.whereNull('g.deleted_at').where('g.is_display', GroupDisplay.Shown));
      if (m.groupId) q.orWhere('g.id', m.groupId);
    })
    .orderByRaw('g.id = ? DESC, g.id', [m.groupId ?? 0])
    .select(
      'g.id',
      'g.group_name',
      'g.description',
      db.raw(
        'NOT EXISTS (SELECT 1 FROM unsubscribe_group_recipients r WHERE r.user_id = ? AND r.unsubscribe_groups_id = g.id AND lower(r.email_address) = lower(?)) AS subscribed',
        [m.userId, m.email],
      ),
    )) as GroupState[];
  const all = await db('global_unsubscribers').where('user_id', m.userId).whereRaw('lower(email_address) = lower(?)', [m.email]).first('id');
  return { groups, all: Boolean(all) };
}

/**
 * The first unsubscribe through a message is its `unsubscribed` event (the recipient row
 * remembers it, so a second visit to the page is no second fact); the statistics count it.
 */
async function recordUnsubscribe(trx: Knex.Transaction, m: MessageContext, groupId: number | null): Promise<void> {
  if (!(await markUnsubscribed(trx, m.userId, m.deliveryId))) return;
  await recordMessageEvents(trx, [
    {
      type: 'unsubscribed',
      userId: m.userId,
      deliveryId: m.deliveryId,
      ...m.source,
      email: m.email,
      data: { group_id: groupId },
    },
  ]);
}

/** Applies the form: unticked groups get the address, re-ticked ones lose it; "all" is global. */
export async function savePreferences(db: Knex, m: MessageContext, keep: Set<number>, all: boolean): Promise<void> {
  await db.transaction(async (trx) => {
    const { groups } = await groupsFor(trx, m);
    // The group the unsubscribe event names: the first one the address newly left (null: everything).
    let left: number | null | undefined;
    for (const g of groups) {
      if (keep.has(g.id)) {
        await resubscribeToGroup(trx, m.userId, g.id, m.email);
      } else if ((await unsubscribeFromGroup(trx, m.userId, g.id, [m.email])) && left === undefined) {
        left = g.id;
      }
    }
    if (all) {
      if (await unsubscribeGlobally(trx, m.userId, [m.email], m.groupId)) left = null;
    } else {
      await resubscribeGlobally(trx, m.userId, m.email);
    }
    if (left !== undefined) await recordUnsubscribe(trx, m, left);
  });
}

/** RFC 8058 one-click: the address leaves the message's group (or everything, if it has none). */
export async function oneClick(db: Knex, m: MessageContext): Promise<void> {
  await db.transaction(async (trx) => {
    if (m.groupId) await unsubscribeFromGroup(trx, m.userId, m.groupId, [m.email]);
    else await unsubscribeGlobally(trx, m.userId, [m.email]);
    await recordUnsubscribe(trx, m, m.groupId);
  });
}

interface PreferencesProps {
  token: string;
  email: string;
  groups: GroupState[];
  all: boolean;
  notice?: string;
  /** What follows the form (more things a recipient can do with this link). */
  children?: ComponentChildren;
}

/** The preferences page: the lists the address gets, "everything", and below them `children`. */
export function PreferencesPage({ token, email, groups, all, notice, children }: PreferencesProps) {
  return (
    <>
      <Heading>Email preferences</Heading>
      {notice ? <Notice>{notice}</Notice> : null}
      <Text>
        Choose what <strong>{email}</strong> receives. Untick a list to stop getting it.
      </Text>
      <PostForm action={`/unsubscribe/${token}`}>
        <Hidden name="action" value="save" />
        <ChoiceList
          legend="Lists"
          name="keep"
          choices={groups.map((g) => ({ value: String(g.id), label: g.group_name, hint: g.description, checked: g.subscribed }))}
          empty="No lists to show."
        />
        <fieldset>
          <legend>Everything</legend>
          <Checkbox name="all" checked={all} label="Unsubscribe from all email" hint="You will get no more messages from this sender." />
        </fieldset>
        <PrimaryButton>Save preferences</PrimaryButton>
      </PostForm>
      {children}
    </>
  );
}

function sendPreferences(res: Response, props: PreferencesProps): void {
  sendRecipientPage(res, 200, { title: 'Email preferences', body: <PreferencesPage {...props}>{props.children ?? <PrivacyLinks token={props.token} />}</PreferencesPage> });
}

function readKeep(body: Record<string, unknown>): Set<number> {
  const raw = body.keep ?? body['keep[]'];
  const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return new Set(values.map((v) => Number(v)).filter((n) => Number.isInteger(n) && n > 0));
}

export function mountUnsubscribe(app: Express, deps: Deps): void {
  const parse = [express.urlencoded({ extended: true, limit: '16kb' }), multer({ limits: { fieldSize: 16 * 1024, fields: 200 } }).none()];

  const load = async (req: Request, res: Response): Promise<MessageContext | undefined> => {
    const m = await resolveMessage(deps.db, String(req.params.token));
    if (!m) sendRecipientMessage(res, 404, 'Link not recognised', 'This unsubscribe link is invalid or no longer works.');
    return m;
  };

  app.get(
    '/unsubscribe/:token',
    pageErrors(async (req, res) => {
      const m = await load(req, res);
      if (!m) return;
      const { groups, all } = await groupsFor(deps.db, m);
      sendPreferences(res, { token: String(req.params.token).toLowerCase(), email: m.email, groups, all });
    }),
  );

  app.post('/unsubscribe/:token', ...parse, pageErrors(async (req: Request, res: Response) => {
    const m = await load(req, res);
    if (!m) return;
    const body = (req.body ?? {}) as Record<string, unknown>;
    const token = String(req.params.token).toLowerCase();
    if (body['List-Unsubscribe'] === 'One-Click' || body.action !== 'save') {
      await oneClick(deps.db, m);
      sendRecipientPage(res, 200, {
        title: 'Unsubscribed',
        body: (
          <>
            <Heading>You are unsubscribed</Heading>
            <Text>{m.email} will get no more of these messages.</Text>
          </>
        ),
      });
      return;
    }
    await savePreferences(deps.db, m, readKeep(body), body.all === '1');
    const { groups, all } = await groupsFor(deps.db, m);
    sendPreferences(res, { token, email: m.email, groups, all, notice: 'Your preferences have been saved.' });
  }));
}
