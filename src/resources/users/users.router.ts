import { z } from 'zod';
import { messages, ok, type Envelope } from '../../http/envelope';
import { notFound1 } from '../../http/errors';
import { route, type RouteDef } from '../../http/routes';
import { confirmation } from '../shared/schemas';
import { invitation, inviteBody, roleBody, twoFactorBody, userRecord, type UserRecord } from './users.schemas';
import * as service from './users.service';

/**
 * Herald extension (issue 37): the account's users. With the API keys these act as the owner;
 * from the dashboard's Team page, as the signed-in user's role allows (an admin manages every user
 * but the owners).
 */
const tag = 'Users';
const byId = { name: 'id', notFound: notFound1, requiredMessage: true };
const OWNER_ONLY = 'An owner, or making one, needs account:manage (the API keys have it; an admin does not).';
const OWNER_RULES = `${OWNER_ONLY} The last owner can be neither demoted nor removed.`;

/** What a change did, for its audit entry (written by runRoute once the handler succeeded), by request. */
const summaries = new WeakMap<object, string>();
const said = ({ req }: { req: object }) => summaries.get(req) ?? '';
/** The invitation's answer (invite, resend-invitation): the user it went to. */
const invited = (envelope: Envelope) => ('message' in envelope ? (envelope.message as { user: UserRecord }).user : undefined);

export const userRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/users',
    tag,
    summary: 'The account’s users, oldest first (never a password, a secret or a recovery code)',
    permission: 'read',
    response: z.object({ users: z.array(userRecord) }),
    failures: ['AUTH'],
    handle: async ({ ctx }) => ok({ users: await service.listUsers(ctx) }),
  }),
  route({
    method: 'post',
    path: '/users/invite',
    tag,
    summary: 'Invite a user by address: mails a one-time link valid 72 hours (the answer never holds the link)',
    description: `${OWNER_RULES} An address is a user of one account only. When the mail server does not take the invitation the answer is 503 and nothing is kept.`,
    body: inviteBody,
    permission: 'users:manage',
    response: invitation,
    failures: ['AUTH', 'VAL'],
    audit: {
      action: 'user.invited',
      entry: (_input, envelope) => {
        const u = invited(envelope);
        return { objectKind: 'user', objectId: u?.id, summary: u ? `${u.email} as ${u.role}` : '' };
      },
    },
    handle: async ({ ctx, deps, body }) => ok(await service.inviteUser(ctx, deps, body)),
  }),
  route({
    method: 'post',
    path: '/users/resend-invitation',
    tag,
    summary: 'Mail a new invitation link (72 hours) to a user who has not set a password yet; the earlier link stops working',
    description: OWNER_RULES,
    id: byId,
    permission: 'users:manage',
    response: invitation,
    failures: ['AUTH', 'VAL', 'NF1', 'REFUSED'],
    audit: { action: 'user.invitation_resent', entry: ({ id }, envelope) => ({ objectKind: 'user', objectId: id, summary: invited(envelope)?.email ?? '' }) },
    handle: async ({ ctx, deps, id }) => ok(await service.resendInvitation(ctx, deps, id)),
  }),
  route({
    method: 'post',
    path: '/users/role',
    tag,
    summary: 'Give a user another role; their dashboard sessions end',
    description: OWNER_RULES,
    id: byId,
    body: roleBody,
    permission: 'users:manage',
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1', 'REFUSED'],
    audit: {
      action: 'user.role_changed',
      entry: (input) => ({ objectKind: 'user', objectId: input.id, summary: said(input) }),
    },
    handle: async ({ ctx, id, body, req }) => {
      const { user: u, from } = await service.changeRole(ctx, id, body.role);
      summaries.set(req, from === u.role ? `${u.email}: ${from} (unchanged)` : `${u.email}: ${from} → ${u.role}`);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'post',
    path: '/users/delete',
    tag,
    summary: 'Remove a user: their sign-in, links and sessions go; their entries in the audit log stay',
    description: OWNER_RULES,
    id: byId,
    permission: 'users:manage',
    response: confirmation(messages.deleted),
    failures: ['AUTH', 'VAL', 'NF1', 'REFUSED'],
    audit: {
      action: 'user.removed',
      entry: (input) => ({ objectKind: 'user', objectId: input.id, summary: said(input) }),
    },
    handle: async ({ ctx, id, req }) => {
      const removed = await service.removeUser(ctx, id);
      summaries.set(req, `${removed.email} (${removed.role})`);
      return ok(messages.deleted);
    },
  }),
  route({
    method: 'post',
    path: '/users/reset-two-factor',
    tag,
    summary: 'Clear a user’s second factor (TOTP and recovery codes) and end their sessions; they set one up again',
    description: OWNER_ONLY,
    id: byId,
    permission: 'users:manage',
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL', 'NF1'],
    audit: {
      action: 'user.two_factor_reset',
      entry: (input) => ({ objectKind: 'user', objectId: input.id, summary: said(input) }),
    },
    handle: async ({ ctx, id, req }) => {
      const u = await service.resetTwoFactor(ctx, id);
      summaries.set(req, u.email);
      return ok(messages.updated);
    },
  }),
  route({
    method: 'post',
    path: '/account/two-factor',
    tag,
    summary: 'Require a second factor of every user of the account (required=1), or leave it to each (required=0)',
    description: 'A user without one is sent to set it up at their next sign-in. Needs account:manage (the owner; the API keys).',
    body: twoFactorBody,
    permission: 'account:manage',
    response: confirmation(messages.updated),
    failures: ['AUTH', 'VAL'],
    audit: {
      action: 'account.two_factor_changed',
      entry: ({ body }) => ({ objectKind: 'account', summary: body.required ? 'a second factor is required of every user' : 'a second factor is left to each user' }),
    },
    handle: async ({ ctx, body }) => {
      await service.setRequireTwoFactor(ctx, body.required === 1);
      return ok(messages.updated);
    },
  }),
];
