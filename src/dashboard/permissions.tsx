import type { RequestHandler, Router } from 'express';
import { recordAudit, type AuditEntry } from '../audit/record';
import { can, refusedMessage, type Permission } from '../team/permissions';
import { MessagePage } from './layout';
import { pageContext, sendPage, type PageContext } from './respond';

/**
 * The dashboard's permissions (issue 37, docs/decisions.md "Teams"): every page and action checks
 * exactly one named permission, registered here as it is mounted (`guarded`), so the registry
 * lists them all (the table-driven test walks it). A refused request is 403: a page titled
 * "Refused" with the permission's name, or the JSON envelope for a script. What a role cannot
 * use is not shown (`allowed`); the API routes a form runs check their own permission again.
 */

export interface DashboardAction {
  method: 'GET' | 'POST';
  /** The express path under /app, e.g. `/app/sends/:utr/schedule`. */
  path: string;
  permission: Permission;
}

const registry = new Map<string, DashboardAction>();

/** Every dashboard page and action with its permission, in the order they were mounted. */
export function dashboardActions(): DashboardAction[] {
  return [...registry.values()];
}

/** The role of the request's session may use `permission` (no actor: nothing is allowed). */
export function allowed(p: PageContext, permission: Permission): boolean {
  const role = p.ctx.actor?.role;
  return role !== undefined && can(role, permission);
}

/** Refuses, with 403 naming the permission, a session whose role lacks it. After the session guard. */
export function need(permission: Permission): RequestHandler {
  return (req, res, next) => {
    const p = pageContext(res);
    if (allowed(p, permission)) {
      next();
      return;
    }
    const message = refusedMessage(permission);
    if (req.accepts(['html', 'json']) === 'json') {
      res.status(403).json({ status: 'failed', errors: [message] });
      return;
    }
    sendPage(
      res,
      403,
      <MessagePage title="Refused" csrf={p.session.csrf}>
        <p class="error" role="alert">
          {message}
        </p>
        <p>
          <a href="/app">Go to the overview</a>
        </p>
      </MessagePage>,
    );
  };
}

export interface Guarded {
  /** A page (or a script's JSON): the session, then the permission, then `handlers`. */
  get(path: string, permission: Permission, ...handlers: RequestHandler[]): void;
  /** An action: the session, then the permission, then `handlers` (body parser, CSRF, the action). */
  post(path: string, permission: Permission, ...handlers: RequestHandler[]): void;
}

/** Mounts an area's pages and actions, each behind the session and its one permission, and registers them. */
export function guarded(router: Router, signedIn: RequestHandler): Guarded {
  const add = (method: 'GET' | 'POST', path: string, permission: Permission) => registry.set(`${method} /app${path}`, { method, path: `/app${path}`, permission });
  return {
    get(path, permission, ...handlers) {
      add('GET', path, permission);
      router.get(path, signedIn, need(permission), ...handlers);
    },
    post(path, permission, ...handlers) {
      add('POST', path, permission);
      router.post(path, signedIn, need(permission), ...handlers);
    },
  };
}

/**
 * The audit entry of a dashboard action that does not run an API route (those write their own):
 * lifting a suppression, checking a sender, testing a webhook, an import's mapping step…
 */
export async function auditAction(p: PageContext, entry: AuditEntry): Promise<void> {
  if (p.ctx.actor) await recordAudit(p.ctx.db, p.ctx.userId, p.ctx.actor, entry);
}
