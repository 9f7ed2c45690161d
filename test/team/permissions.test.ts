import type { Request, Response } from 'express';
import type { Actor, Ctx, Deps } from '../../src/context';
import { ok } from '../../src/http/envelope';
import { AppError } from '../../src/http/errors';
import { runRoute, type RouteDef } from '../../src/http/routes';
import { apiRoutes } from '../../src/resources';
import { can, refusedMessage, ROLES, type Permission, type Role } from '../../src/team/permissions';

/**
 * Issue 37: every API route checks exactly one named permission (RouteDef.permission), before
 * validation: every route × every role answers 403 with the permission's name exactly when the
 * role lacks it. The dashboard's forms run the same routes through runRoute (form-kit
 * submitRoute), so this guards them too; the dashboard's own actions are in
 * test/team/permissions-dashboard.test.ts.
 */

/** Every route that needs more than `read`; every other route of these families is `read`. */
const EXPECTED: Record<string, Permission> = {
  'POST /automations/create': 'campaigns:manage',
  'GET /automations/duplicate': 'campaigns:manage',
  'GET /automations/pause': 'campaigns:send',
  'GET /automations/set-live': 'campaigns:send',
  'DELETE /automations/delete': 'campaigns:manage',
  'POST /automations/bulk-delete': 'campaigns:manage',
  'POST /automations/schedule/create': 'campaigns:manage',
  'POST /automations/schedule/update': 'campaigns:manage',
  'DELETE /automations/schedule/delete': 'campaigns:manage',
  'POST /contacts-type/add': 'audience:manage',
  'POST /contacts-type/update': 'audience:manage',
  'DELETE /contacts-type/delete': 'audience:manage',
  'GET /contacts/export': 'audience:manage',
  'POST /contacts/add': 'audience:manage',
  'POST /contacts/upload-csv': 'audience:manage',
  'POST /contacts/update': 'audience:manage',
  'DELETE /contacts/delete': 'audience:manage',
  'POST /contacts/bulk-delete': 'audience:manage',
  'GET /contacts/export-person': 'contacts:erase',
  'POST /contacts/erase': 'contacts:erase',
  'POST /designs/save': 'campaigns:manage',
  'POST /designs/update': 'campaigns:manage',
  'DELETE /designs/delete': 'campaigns:manage',
  'POST /designs/preview': 'campaigns:manage',
  'POST /custom-fields/save': 'audience:manage',
  'DELETE /custom-fields/delete': 'audience:manage',
  'POST /forms/save': 'audience:manage',
  'POST /forms/update': 'audience:manage',
  'DELETE /forms/delete': 'audience:manage',
  'POST /notification-recipient/save': 'settings:manage',
  'DELETE /notification-recipient/delete': 'settings:manage',
  'POST /notification-recipient/bulk-delete': 'settings:manage',
  'POST /segment/email/store': 'audience:manage',
  'DELETE /segment/email/delete': 'audience:manage',
  'DELETE /segment/delete': 'audience:manage',
  'POST /segment/save': 'audience:manage',
  'POST /segment/update': 'audience:manage',
  'POST /sender/save': 'settings:manage',
  'POST /sender/update': 'settings:manage',
  'DELETE /sender/delete': 'settings:manage',
  'POST /sender/dns/check': 'settings:manage',
  'POST /sender/dns/rotate': 'settings:manage',
  'GET /sender/resend-mail': 'settings:manage',
  'POST /single/send/create': 'campaigns:manage',
  'GET /single/send/duplicate': 'campaigns:manage',
  'POST /single/send/update': 'campaigns:manage',
  'POST /single/send/schedule': 'campaigns:send',
  'POST /single/send/unschedule': 'campaigns:send',
  'POST /single/send/pause': 'campaigns:send',
  'POST /single/send/resume': 'campaigns:send',
  'POST /single/send/test': 'campaigns:manage',
  'POST /single/send/ab/winner': 'campaigns:send',
  'DELETE /single/send/delete': 'campaigns:manage',
  'POST /single/send/bulk-delete': 'campaigns:manage',
  'POST /suppressions/add': 'settings:manage',
  'DELETE /suppressions/delete': 'settings:manage',
  'POST /unsubscribes-groups/save': 'settings:manage',
  'POST /unsubscribes-groups/update': 'settings:manage',
  'DELETE /unsubscribes-groups/delete': 'settings:manage',
  'POST /unsubscribes-groups/manually-add': 'settings:manage',
  'DELETE /unsubscribes-groups/recipients-delete': 'settings:manage',
  'POST /unsubscribes-groups/recipients-bulk-delete': 'settings:manage',
  'POST /global-unsubscribes/save': 'settings:manage',
  'DELETE /global-unsubscribes/delete': 'settings:manage',
  'POST /global-unsubscribes/bulk-delete': 'settings:manage',
  'POST /webhooks/save': 'settings:manage',
  'DELETE /webhooks/delete': 'settings:manage',
  'POST /webhooks/test': 'settings:manage',
};

/**
 * Routes that answer to a method other than GET, or need more than `read`, and still change
 * nothing: they write no audit entry.
 */
const READ_ONLY: Record<string, string> = {
  'GET /senders': 'the sender list, also answered to POST (spec rule 9)',
  'POST /designs/preview': 'renders an unsaved design; stores nothing',
};

/** Families other helpers add (users, the audit log, the account's security): their own tests say which permission; here every role is checked against what they declare. */
const OTHERS = /^\/(users|audit-log|account)(\/|$)/;

/** Permissions that only let one read: a GET route needing another one changes something (or hands data out: exports). */
const READING: Permission[] = ['read', 'audit:read'];

const key = (def: RouteDef) => `${def.method.toUpperCase()} ${def.path}`;
const methods = (def: RouteDef) => [def.method, ...(def.alsoMethods ?? [])];

function actor(role: Role): Actor {
  return { memberId: role === 'owner' ? null : 1, role, label: `${role}@example.com`, via: 'dashboard', address: '127.0.0.1' };
}

/**
 * runRoute with empty input as `role`, the handler replaced (the check comes before validation and
 * the handler; an allowed call then fails validation, is not found, or reaches the stub).
 */
async function statusAs(def: RouteDef, role: Role): Promise<{ status: number; errors?: unknown }> {
  const stub: RouteDef = { ...def, audit: undefined, handle: () => ok('reached') };
  const ctx: Ctx = { userId: 1, db: undefined as unknown as Ctx['db'], actor: actor(role) };
  try {
    await runRoute(stub, { query: {}, body: {} }, { ctx, deps: {} as Deps, req: {} as Request, res: {} as Response });
    return { status: 200 };
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, errors: err.errors };
    throw err;
  }
}

describe('permissions of the API routes (issue 37)', () => {
  it('the route table has every route once, each with one permission', () => {
    const keys = apiRoutes.map(key);
    expect(new Set(keys).size).toBe(keys.length);
    expect(apiRoutes.length).toBeGreaterThanOrEqual(116);
    for (const def of apiRoutes) expect(typeof def.permission).toBe('string');
  });

  it('each route needs the permission of the documented mapping (reads: read)', () => {
    const actual = Object.fromEntries(apiRoutes.filter((d) => !OTHERS.test(d.path)).map((d) => [key(d), d.permission]));
    const expected = Object.fromEntries(Object.keys(actual).map((k) => [k, EXPECTED[k] ?? 'read']));
    expect(actual).toEqual(expected);
    // Nothing listed that is not a route.
    expect(Object.keys(EXPECTED).filter((k) => !(k in actual))).toEqual([]);
  });

  const cases = apiRoutes.flatMap((def) => ROLES.map((role) => [key(def), role, def] as const));
  it.each(cases)('%s as %s: 403 exactly when the role lacks the permission', async (_name, role, def) => {
    const answer = await statusAs(def, role);
    if (can(role, def.permission)) {
      expect(answer.status).not.toBe(403);
    } else {
      expect(answer).toEqual({ status: 403, errors: refusedMessage(def.permission) });
      expect(refusedMessage(def.permission)).toContain(def.permission);
    }
  });

  it('every route that changes something declares its audit entry (the read-only ones are named, with a reason)', () => {
    const changing = apiRoutes.filter((d) => methods(d).some((m) => m !== 'get') || !READING.includes(d.permission));
    const missing = changing.filter((d) => !d.audit && !READ_ONLY[key(d)]).map(key);
    expect(missing).toEqual([]);
    // The exceptions are routes, and really write nothing.
    for (const k of Object.keys(READ_ONLY)) expect(apiRoutes.find((d) => key(d) === k)?.audit).toBeUndefined();
    // Action names: <object kind>.<past-tense verb>, snake_case.
    for (const d of apiRoutes) if (d.audit) expect(d.audit.action).toMatch(/^[a-z_]+\.[a-z_]+$/);
  });

  it('no role but the owner and admin erases; viewers only read', () => {
    const needs = (p: Permission) => ROLES.filter((r) => can(r, p));
    expect(needs('contacts:erase')).toEqual(['owner', 'admin']);
    expect(needs('campaigns:send')).toEqual(['owner', 'admin', 'sender']);
    const viewerRoutes = apiRoutes.filter((d) => can('viewer', d.permission));
    for (const d of viewerRoutes) expect(d.permission).toBe('read');
  });
});
