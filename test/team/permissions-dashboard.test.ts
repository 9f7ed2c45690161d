import { dashboardActions } from '../../src/dashboard/permissions';
import { can, refusedMessage, ROLES, type Role } from '../../src/team/permissions';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { signInAs, type SignedIn } from '../helpers/team';

/**
 * Issue 37: every dashboard page and action checks exactly one named permission (the registry of
 * src/dashboard/permissions.tsx, filled as the pages are mounted). Every registered one × every
 * role, through HTTP with a signed-in user of that role: 403 naming the permission exactly when
 * the role lacks it (checked before anything else, so ids that name nothing are enough); the
 * allowed ones are never 403.
 */
const { app, db } = setupApp();

/** Path parameters that name nothing of the account. */
const PARAMS: Record<string, string> = {
  utr: '00000000-0000-4000-8000-000000000000',
  email: '00000000-0000-4000-8000-000000000001',
  id: '999999',
  token: 'nothing',
  eventId: '1',
};
const fill = (path: string) => path.replace(/:(\w+)/g, (_m, name: string) => PARAMS[name] ?? '1');

let account: TestAccount;
const sessions = new Map<Role, SignedIn>();

beforeAll(async () => {
  account = await makeAccount(db, 'Permissions');
  for (const role of ROLES) sessions.set(role, await signInAs(app, db, account.id, role));
});

const actions = dashboardActions();

describe('permissions of the dashboard (issue 37)', () => {
  it('registers every area’s pages and actions, each once with one permission', () => {
    expect(actions.length).toBeGreaterThan(100);
    const keys = actions.map((a) => `${a.method} ${a.path}`);
    expect(new Set(keys).size).toBe(keys.length);
    // Every page a viewer may see is a GET; every POST changes something and needs more than read.
    for (const a of actions) if (a.method === 'POST') expect(a.permission).not.toBe('read');
    for (const path of ['/app', '/app/sends/:utr/schedule', '/app/suppressions/lift', '/app/webhooks/:id/test', '/app/lists/:id/import/:token']) {
      expect(actions.some((a) => a.path === path || (path === '/app' && a.path === '/app/'))).toBe(true);
    }
  });

  it('every route under /app but the sign-in, the links and the user’s own account is in the registry', () => {
    type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle: { stack?: Layer[] } };
    const top = (app as unknown as { router: { stack: Layer[] } }).router.stack;
    const dashboard = top.map((l) => l.handle.stack).find((stack) => stack?.some((l) => l.route?.path === '/sign-in'));
    expect(dashboard).toBeDefined();
    const registered = new Set(actions.map((a) => `${a.method} ${a.path}`));
    // Open to every signed-in user, or to nobody signed in: no permission of a role applies.
    const open = /^\/(assets\/|sign-in$|sign-out$|welcome\/|reset(\/|$)|account(\/|$))/;
    const mounted = dashboard!
      .filter((l) => l.route && !open.test(l.route.path))
      .flatMap((l) => Object.keys(l.route!.methods).map((m) => `${m.toUpperCase()} /app${l.route!.path}`));
    expect(mounted.length).toBeGreaterThan(100);
    expect(mounted.filter((k) => !registered.has(k))).toEqual([]);
  });

  const cases = actions.flatMap((a) => ROLES.map((role) => [`${a.method} ${a.path}`, role, a] as const));
  it.each(cases)('%s as %s: 403 exactly when the role lacks the permission', async (_name, role, a) => {
    const s = sessions.get(role)!;
    const url = fill(a.path);
    const res = a.method === 'GET' ? await s.agent.get(url).set('Accept', 'text/html') : await s.agent.post(url).set('Accept', 'text/html').set('X-CSRF-Token', s.csrf).type('form').send({ _csrf: s.csrf });
    if (can(role, a.permission)) {
      expect(res.status).not.toBe(403);
    } else {
      expect(res.status).toBe(403);
      expect(res.text).toContain('<title>Refused');
      expect(res.text).toContain(refusedMessage(a.permission));
    }
  });

  it('a script (Accept: application/json) is refused with the envelope', async () => {
    const viewer = sessions.get('viewer')!;
    const res = await viewer.agent.post('/app/suppressions/lift').set('Accept', 'application/json').set('X-CSRF-Token', viewer.csrf).type('form').send({ email: 'a@example.com' });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 'failed', errors: [refusedMessage('settings:manage')] });
  });
});

describe('a ready send is sending (issue 37)', () => {
  it('an editor saves a draft but not a ready send (campaigns:send, after the form was checked); a sender may', async () => {
    const [sender, group, list] = await Promise.all([makeSender(db, account), makeGroup(db, account), makeContactType(db, account)]);
    const fields = {
      single_send_name: 'Ready?',
      subject: 'Hello',
      preheader: 'Hi',
      template_id: '1',
      template_html: '<p>Hello</p>',
      sender_id: String(sender),
      unsubscribe_group_id: String(group),
      'recipient_id[]': `contacts_${list}`,
      schedule_at: '2099-01-01T10:00',
    };
    const editor = sessions.get('editor')!;
    const refused = await editor.agent.post('/app/sends/new').type('form').send({ _csrf: editor.csrf, ...fields, intent: 'schedule' });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(refusedMessage('campaigns:send'));
    const draft = await editor.agent.post('/app/sends/new').type('form').send({ _csrf: editor.csrf, ...fields, intent: 'draft' });
    expect(draft.status).toBe(303);
    const sender_ = sessions.get('sender')!;
    const ready = await sender_.agent.post('/app/sends/new').type('form').send({ _csrf: sender_.csrf, ...fields, intent: 'schedule' });
    expect(ready.status).toBe(303);
  });
});

describe('what a role cannot use is not shown (issue 37)', () => {
  it('a draft send’s page: the viewer reads it, the editor edits it, the sender schedules and sends it', async () => {
    const refs = { sender: await makeSender(db, account), group: await makeGroup(db, account), list: await makeContactType(db, account) };
    const { utr } = await createSend(app, db, account, refs, { draft: 1 });
    const page = async (role: Role) => (await sessions.get(role)!.agent.get(`/app/sends/${utr}`)).text;
    const shows = (html: string) => ({
      edit: html.includes(`href="/app/sends/${utr}/edit"`),
      sendNow: html.includes(`href="/app/sends/${utr}/send-now"`),
      schedule: html.includes(`action="/app/sends/${utr}/schedule"`),
      test: html.includes(`action="/app/sends/${utr}/test"`),
      remove: html.includes(`href="/app/sends/${utr}/delete"`),
    });
    expect(shows(await page('viewer'))).toEqual({ edit: false, sendNow: false, schedule: false, test: false, remove: false });
    expect(shows(await page('editor'))).toEqual({ edit: true, sendNow: false, schedule: false, test: true, remove: true });
    expect(shows(await page('sender'))).toEqual({ edit: true, sendNow: true, schedule: true, test: true, remove: true });
  });

  it('lists, senders, deliverability and webhooks show their changes only to the roles that may make them', async () => {
    const list = await makeContactType(db, account);
    const viewer = sessions.get('viewer')!;
    const editor = sessions.get('editor')!;
    const admin = sessions.get('admin')!;
    const listPage = (s: SignedIn) => s.agent.get(`/app/lists/${list}`).then((r) => r.text);
    expect(await listPage(viewer)).not.toContain(`/app/lists/${list}/contacts/new`);
    expect(await listPage(viewer)).not.toContain(`action="/app/lists/${list}/import"`);
    expect(await listPage(editor)).toContain(`/app/lists/${list}/contacts/new`);
    const senders = (s: SignedIn) => s.agent.get('/app/senders').then((r) => r.text);
    expect(await senders(editor)).not.toContain('href="/app/senders/new"');
    expect(await senders(admin)).toContain('href="/app/senders/new"');
    await api(app, account).form('/suppressions/add', { emails: 'shown@example.com' });
    const deliverability = (s: SignedIn) => s.agent.get('/app/deliverability').then((r) => r.text);
    expect(await deliverability(editor)).not.toContain('action="/app/suppressions/lift"');
    expect(await deliverability(admin)).toContain('action="/app/suppressions/lift"');
    const contacts = (s: SignedIn) => s.agent.get('/app/contacts').then((r) => r.text);
    expect(await contacts(viewer)).not.toContain('href="/app/lists/new"');
    expect(await contacts(editor)).toContain('href="/app/lists/new"');
  });
});
