import { z } from 'zod';
import { listAudit, type AuditWho } from '../../audit/read';
import { ok } from '../../http/envelope';
import { isEmail } from '../../http/fields';
import { listPayload } from '../../http/pagination';
import { route, type RouteDef } from '../../http/routes';
import { intId, pagination, timestamp } from '../shared/schemas';

/**
 * Herald extension (issue 37): the audit log, what each user (or the API keys, or an operator
 * with the CLI) changed, newest first. Entries cannot be changed or deleted through Herald; the
 * worker deletes those older than AUDIT_RETENTION_DAYS.
 */

/** `user`: a user's id, their email (also a user removed since), or `keys`. */
const who = () =>
  z
    .string()
    .max(254)
    .transform((v, ctx): AuditWho => {
      const text = v.trim();
      if (/^\d{1,10}$/.test(text) && Number(text) >= 1 && Number(text) <= 2_147_483_647) return { memberId: Number(text) };
      if (text.toLowerCase() === 'keys') return { keys: true };
      if (isEmail(text)) return { email: text };
      ctx.addIssue({ code: 'custom', message: 'The :attribute must be a user id, an email address or keys.' });
      return z.NEVER;
    })
    .optional()
    .meta({ description: 'a user’s id, their email address (also of a user removed since), or `keys` (the account’s API keys)', example: 'keys' });

export const auditQuery = z.object({
  since: z
    .string()
    .refine((v) => /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)), {
      message: 'The :attribute is not a valid date.',
    })
    .optional()
    .meta({ description: 'ISO 8601: entries at or after it', example: '2026-12-01T00:00:00Z' }),
  user: who(),
  action: z
    .string()
    .max(100)
    .regex(/^[a-z][a-z0-9_]*\.([a-z][a-z0-9_]*)?$/, { message: 'The :attribute format is invalid.' })
    .optional()
    .meta({ description: 'an action (`user.role_changed`), or every action of a kind: its name and a dot (`single_send.`)', example: 'single_send.' }),
});

export const auditRecord = z.strictObject({
  id: intId(),
  at: timestamp(),
  actor: z.string().meta({ description: 'the user’s email (as it was then), `API keys`, or `operator (CLI)`' }),
  actor_user_id: intId().nullable().meta({ description: 'the user; null for the API keys and the CLI' }),
  via: z.enum(['api', 'dashboard', 'cli']),
  address: z.string().nullable().meta({ description: 'the client address (null from the CLI)' }),
  action: z.string().meta({ description: '`<object kind>.<what happened>`, e.g. `single_send.scheduled`, `contact.erased`, `user.role_changed`' }),
  object_kind: z.string().nullable(),
  object_id: z.string().nullable().meta({ description: 'the object’s id or utr' }),
  summary: z.string().meta({ description: 'what changed, in one line: names and counts, never a secret or a message body' }),
});

export const auditLogRoutes: RouteDef[] = [
  route({
    method: 'get',
    path: '/audit-log',
    tag: 'Audit log',
    summary: 'Who changed what, newest first (the newest 100 unless ?page= or ?per_page=)',
    description: 'Every change made through the API, the dashboard or the CLI, kept AUDIT_RETENTION_DAYS (365 by default).',
    query: auditQuery,
    list: true,
    permission: 'audit:read',
    response: z.object({ entries: z.array(auditRecord), pagination: pagination.optional() }),
    failures: ['AUTH', 'VAL'],
    handle: async ({ ctx, query, paging }) => ok(listPayload('entries', await listAudit(ctx.db, ctx.userId, { who: query.user, action: query.action, since: query.since }, paging))),
  }),
];
