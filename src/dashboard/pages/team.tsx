import type { Request, Response } from 'express';
import { forbidden, type FieldErrors } from '../../http/errors';
import type { RouteDef } from '../../http/routes';
import { userRoutes } from '../../resources/users/users.router';
import type { UserRecord } from '../../resources/users/users.schemas';
import { findUser, listUsers, requiresTwoFactor } from '../../resources/users/users.service';
import { can, refusedMessage, ROLE_DESCRIPTIONS, ROLES, type Permission, type Role } from '../../team/permissions';
import { Section, Table } from '../components';
import { emptyForm, ErrorSummary, Field, FORM_ERROR, submitRoute, type FormState } from '../form-kit';
import { when } from '../format';
import { Csrf, Layout, PostButton } from '../layout';
import { guarded } from '../permissions';
import { page, sendPage, type DashboardKit, type PageContext } from '../respond';
import { Flash, posted, Refusal, routeOf } from './sender-kit';

/**
 * The Team page (/app/team, users:manage): the account's users with their role and status, the
 * invitation form, and per user: change the role, resend the invitation, reset the second factor,
 * remove (after a confirmation page); for the owner (account:manage) the switch that requires a
 * second factor of everybody. Every form runs the API route that does the same (form-kit.tsx), so
 * the API's rules and words hold here: an admin neither touches an owner nor makes one, and the
 * last owner stays.
 */
const INVITE = routeOf(userRoutes, '/users/invite');
const RESEND = routeOf(userRoutes, '/users/resend-invitation');
const ROLE = routeOf(userRoutes, '/users/role');
const REMOVE = routeOf(userRoutes, '/users/delete');
const RESET = routeOf(userRoutes, '/users/reset-two-factor');
const TWO_FACTOR = routeOf(userRoutes, '/account/two-factor');

const DONE: Record<string, string> = {
  invited: 'The invitation is on its way: the link in it works once, for 72 hours.',
  resent: 'A new invitation is on its way; the earlier link no longer works.',
  role: 'The role was changed. The user signs in again to use it.',
  removed: 'The user was removed.',
  reset: 'The second factor was reset. The user sets one up again at their next sign-in.',
  'two-factor-on': 'Every user now needs a second factor.',
  'two-factor-off': 'A second factor is now each user’s choice.',
};

const roleOf = (p: PageContext): Role => p.ctx.actor?.role ?? 'owner';

/** Whether the signed-in role may act on this user (an owner needs account:manage). */
const mayTouch = (p: PageContext, u: UserRecord) => u.role !== 'owner' || can(roleOf(p), 'account:manage');

/** The roles the signed-in role may give (owner only with account:manage). */
const givable = (p: PageContext) => ROLES.filter((r) => r !== 'owner' || can(roleOf(p), 'account:manage'));

const userId = (req: Request) => (/^\d{1,10}$/.test(String(req.params.id)) ? String(req.params.id) : '0');

function UserActions({ u, p }: { u: UserRecord; p: PageContext }) {
  const csrf = p.session.csrf;
  if (!mayTouch(p, u)) return <span class="muted">Only an owner changes an owner.</span>;
  const label = u.name || u.email;
  return (
    <div class="actions">
      <form method="post" action={`/app/team/${u.id}/role`} class="inline">
        <Csrf token={csrf} />
        <select id={`role-${u.id}`} name="role" aria-label={`Role of ${label}`}>
          {givable(p).map((r) => (
            <option value={r} selected={r === u.role}>
              {r}
            </option>
          ))}
        </select>
        <button type="submit" aria-label={`Change role: ${label}`}>
          Change role
        </button>
      </form>
      {u.status === 'invited' ? <PostButton action={`/app/team/${u.id}/resend`} csrf={csrf} label="Resend invitation" name={label} /> : null}
      {u.two_factor ? <PostButton action={`/app/team/${u.id}/reset-two-factor`} csrf={csrf} label="Reset second factor" name={label} /> : null}
      <a href={`/app/team/${u.id}/remove`} aria-label={`Remove: ${label}`}>
        Remove
      </a>
    </div>
  );
}

/** The page; `invite` is the invitation form as typed when it was refused, `refusal` an action's messages. */
async function renderTeam(req: Request, res: Response, p: PageContext, status: number, opts: { invite?: FormState; refusal?: FieldErrors } = {}): Promise<void> {
  const [users, required] = await Promise.all([listUsers(p.ctx), requiresTwoFactor(p.ctx)]);
  const csrf = p.session.csrf;
  const invite = opts.invite ?? emptyForm({ role: 'editor' });
  const owner = can(roleOf(p), 'account:manage');
  sendPage(
    res,
    status,
    <Layout title="Team" csrf={csrf} active={'team'} styles={['settings.css']}>
      <h1>Team</h1>
      {opts.refusal || opts.invite ? null : <Flash req={req} texts={DONE} />}
      <Refusal errors={opts.refusal} />
      <Section title="Users" id="users">
        <p class="muted">
          Each user signs in with their own address and password. A role change, a removal and a second-factor reset end the user’s sessions. Who changed what is on the{' '}
          <a href="/app/activity">Activity</a> page.
        </p>
        <Table<UserRecord>
          name="users"
          caption="The account’s users"
          rows={users}
          empty="No users yet: invite one below."
          columns={[
            { label: 'Name', cell: (u) => u.name || '–' },
            { label: 'Email', cell: (u) => <span class="url">{u.email}</span> },
            { label: 'Role', cell: (u) => <span data-role={u.role}>{u.role}</span> },
            { label: 'Status', cell: (u) => <span data-status={u.status}>{u.status === 'active' ? 'active' : 'invited'}</span> },
            { label: 'Second factor', cell: (u) => (u.two_factor ? 'set up' : required ? 'required, not set up' : 'none') },
            {
              label: 'Last sign-in',
              cell: (u) => (
                <>
                  {u.last_sign_in_at ? <time dateTime={u.last_sign_in_at}>{when(u.last_sign_in_at, p.tz)}</time> : 'never'}
                  {can(roleOf(p), 'audit:read') ? (
                    <>
                      {' · '}
                      <a href={`/app/activity?user=${u.id}`} aria-label={`Activity: ${u.name || u.email}`}>
                        activity
                      </a>
                    </>
                  ) : null}
                </>
              ),
            },
            { label: 'Actions', cell: (u) => <UserActions u={u} p={p} /> },
          ]}
        />
      </Section>
      <Section title="Invite a user" id="invite">
        <ErrorSummary state={invite} fields={['email', 'name', 'role']} />
        <form method="post" action="/app/team/invite" class="form" noValidate>
          <Csrf token={csrf} />
          <Field state={invite} name="email" label="Email" type="email" required />
          <Field state={invite} name="name" label="Name" hint="Optional: they can change it." />
          <Field
            state={invite}
            name="role"
            label="Role"
            type="select"
            required
            choices={givable(p).map((r) => ({ value: r, label: `${r}: ${ROLE_DESCRIPTIONS[r]}` }))}
          />
          <div class="actions">
            <button type="submit">Send the invitation</button>
          </div>
        </form>
      </Section>
      {owner ? (
        <Section title="Second factor" id="two-factor">
          <form method="post" action="/app/team/two-factor" class="form">
            <Csrf token={csrf} />
            <Field
              state={emptyForm({ required: required ? '1' : '0' })}
              name="required"
              label="Require a second factor of every user"
              type="checkbox"
              hint="A user without one is sent to set it up at their next sign-in."
            />
            <div class="actions">
              <button type="submit">Save</button>
            </div>
          </form>
        </Section>
      ) : null}
    </Layout>,
  );
}

const teamPage = (req: Request, res: Response, p: PageContext) => renderTeam(req, res, p, 200);

/** Runs a user action's route; done → back to the page with its sentence, refused → the page with the API's words. */
async function act(def: RouteDef, req: Request, res: Response, p: PageContext, raw: { body?: Record<string, unknown>; query?: Record<string, unknown> }, done: string): Promise<void> {
  const outcome = await submitRoute(def, p, req, res, raw);
  if (outcome.ok) res.redirect(303, `/app/team?done=${done}`);
  else if (outcome.status === 403) throw forbidden(outcome.errors[FORM_ERROR]?.[0] ?? refusedMessage(def.permission ?? 'users:manage'));
  else await renderTeam(req, res, p, outcome.status, { refusal: outcome.errors });
}

async function inviteAction(req: Request, res: Response, p: PageContext): Promise<void> {
  const body = posted(req);
  const outcome = await submitRoute(INVITE, p, req, res, { body });
  if (outcome.ok) res.redirect(303, '/app/team?done=invited');
  else if (outcome.status === 403) throw forbidden(outcome.errors[FORM_ERROR]?.[0] ?? refusedMessage('users:manage'));
  else await renderTeam(req, res, p, outcome.status, { invite: { values: body, errors: outcome.errors } });
}

const roleAction = (req: Request, res: Response, p: PageContext) => act(ROLE, req, res, p, { body: { id: userId(req), role: posted(req).role } }, 'role');
const resendAction = (req: Request, res: Response, p: PageContext) => act(RESEND, req, res, p, { body: { id: userId(req) } }, 'resent');
const resetAction = (req: Request, res: Response, p: PageContext) => act(RESET, req, res, p, { body: { id: userId(req) } }, 'reset');
const removeAction = (req: Request, res: Response, p: PageContext) => act(REMOVE, req, res, p, { body: { id: userId(req) } }, 'removed');
const twoFactorAction = (req: Request, res: Response, p: PageContext) => {
  const on = posted(req).required === '1';
  return act(TWO_FACTOR, req, res, p, { body: { required: on ? '1' : '0' } }, on ? 'two-factor-on' : 'two-factor-off');
};

/** "Remove <user>?": what removing does, and the button that does it. */
async function removePage(req: Request, res: Response, p: PageContext): Promise<void> {
  const u = await findUser(p.ctx, Number(userId(req)));
  if (!mayTouch(p, u)) throw forbidden(refusedMessage('account:manage'));
  const label = u.name ? `${u.name} (${u.email})` : u.email;
  sendPage(
    res,
    200,
    <Layout title={`Remove ${u.email}`} csrf={p.session.csrf} active={'team'}>
      <p>
        <a href="/app/team">Team</a>
      </p>
      <h1>Remove {label}?</h1>
      <p>
        They can no longer sign in, and their sessions end now. What they did stays on the <a href="/app/activity">Activity</a> page.
      </p>
      <div class="actions">
        <PostButton action={`/app/team/${u.id}/remove`} csrf={p.session.csrf} label="Remove" name={u.email} />
        <a href="/app/team">Cancel</a>
      </div>
    </Layout>,
  );
}

/** The Team page and its actions (src/dashboard/index.tsx mounts each area), each behind its one permission. */
export function mountTeamPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  const g = guarded(r, signedIn);
  const post = (path: string, permission: Permission, handler: Parameters<typeof page>[0]) => g.post(path, permission, form, requireCsrf, page(handler, 'team'));
  g.get('/team', 'users:manage', page(teamPage, 'team'));
  post('/team/invite', 'users:manage', inviteAction);
  post('/team/two-factor', 'account:manage', twoFactorAction);
  g.get('/team/:id/remove', 'users:manage', page(removePage, 'team'));
  post('/team/:id/remove', 'users:manage', removeAction);
  post('/team/:id/role', 'users:manage', roleAction);
  post('/team/:id/resend', 'users:manage', resendAction);
  post('/team/:id/reset-two-factor', 'users:manage', resetAction);
}
