import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { dashboardPages } from '../dashboard/lib/pages';
import { signIn, type Browserish } from '../dashboard/lib/session';
import { makeWorld, type World } from '../dashboard/lib/world';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';

/**
 * No page of Herald sends a Content-Security-Policy with `'unsafe-inline'` (issue 35): the
 * dashboard, /docs, the recipient pages, the email previews and the design view. The walk starts
 * from every page a signed-in account opens and from the recipient pages' links, then follows
 * every same-origin `href` and `src` it finds (so a new page, asset or preview frame is checked
 * without being listed here), and checks every answer: an HTML answer must carry a policy, and no
 * policy may allow inline script or style.
 */
const { app, db, mailer } = setupApp();

let a: TestAccount;
let w: World;
let session: Browserish;
const seeds: string[] = [];

beforeAll(async () => {
  a = await makeAccount(db, 'Csp');
  w = await makeWorld(db, a);
  session = await signIn(app, a);
  const gb = (await db('countries').where({ iso_code: 'GB' }).first('id')) as { id: number };

  // A message's preferences link, as the worker writes it.
  const token = randomBytes(16).toString('hex');
  await db('deliveries').insert({ user_id: a.id, single_send_id: w.send.id, email: 'csp-reader@example.com', token, status: 'sent' });

  // A sender's verification link, from its mail.
  mailer.clear();
  const saved = await api(app, a).form('/sender/save', {
    from_name: 'Csp',
    from_email: `csp.${randomBytes(3).toString('hex')}@example.com`,
    reply_to_email: 'reply@example.com',
    country_id: gb.id,
    company_address: 'Street 1',
    nickname: 'csp',
  });
  expect(saved.status).toBe(200);
  const [mail] = await mailer.parsed();
  const verify = /\/senders\/verify\/([0-9]+\.[A-Za-z0-9_-]+)/.exec(String(mail.text))![0];

  // Signup forms (issue 35): the hosted page with and without proof of work, one redirecting elsewhere.
  const forms: string[] = [];
  for (const extra of [{ captcha: 'none' }, { captcha: 'proof_of_work', success_url: 'http://127.0.0.2:9/thanks' }]) {
    const form = await api(app, a).json('/forms/save', {
      name: 'Signup',
      contact_type_ids: [w.typeId],
      fields: [{ field_name: 'email', required: 1 }],
      consent_text: 'I agree.',
      confirmation_sender_id: w.senderId,
      ...extra,
    });
    expect(form.status).toBe(200);
    forms.push(`/subscribe/${form.body.message.public_id as string}`);
  }

  seeds.push(
    ...forms,
    `/subscribe/confirm/${'0'.repeat(72)}`,
    ...dashboardPages(w, w.send.utr),
    '/app/designs/new?format=blocks',
    '/app/designs/new?format=markdown',
    '/app/designs/new?format=html',
    '/app/designs/preview?template=3',
    '/docs',
    `/unsubscribe/${token}`,
    '/unsubscribe/ffffffffffffffffffffffffffffffff',
    verify,
    `/senders/verify/${'A'.repeat(43)}`,
    '/t/click/nope',
    `/design/${w.automation.emails[0].utr}`,
    '/design/nope',
  );
}, 120_000);

/** Same-origin paths a page links to or loads (href, src, action of a GET form). */
function linksOf(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/\s(?:href|src)="(\/[^"/][^"]*)"/g)) out.push(m[1].replace(/&amp;/g, '&'));
  return out;
}

/** A path's shape (numbers and tokens as placeholders): the walk opens a few pages of each shape. */
const shape = (path: string) => path.replace(/\?.*$/, '').replace(/[0-9a-f]{8,}|\d+/gi, ':n');

it('walks every page it can reach: HTML answers carry a CSP, and no CSP allows unsafe-inline', async () => {
  const queue = [...seeds];
  const seen = new Set<string>();
  const perShape = new Map<string, number>();
  const html: string[] = [];
  const problems: string[] = [];
  while (queue.length && seen.size < 400) {
    const path = queue.shift()!;
    if (seen.has(path) || path.startsWith('/app/sign-out')) continue;
    const s = shape(path);
    if ((perShape.get(s) ?? 0) >= 3) continue;
    perShape.set(s, (perShape.get(s) ?? 0) + 1);
    seen.add(path);
    const res = await request(app).get(path).set('Cookie', path.startsWith('/app') ? session.cookie : '');
    const csp = res.headers['content-security-policy'] as string | undefined;
    const isHtml = /^text\/html/.test(String(res.headers['content-type'] ?? ''));
    if (csp && /unsafe-inline/.test(csp)) problems.push(`${path}: ${csp}`);
    if (isHtml) {
      html.push(path);
      if (!csp) problems.push(`${path}: HTML without a Content-Security-Policy`);
      queue.push(...linksOf(res.text));
    }
  }
  expect(problems).toEqual([]);
  // The walk did reach each kind of page (a broken seed would otherwise pass unseen).
  for (const kind of [/^\/app$/, /^\/app\/sends\/[^/]+\/preview/, /^\/app\/designs\/.*preview/, /^\/docs$/, /^\/unsubscribe\//, /^\/senders\/verify\//, /^\/design\//, /^\/t\/click\//, /^\/subscribe\/[0-9a-f]{48}$/, /^\/subscribe\/confirm\//]) {
    expect({ kind: String(kind), reached: html.some((p) => kind.test(p)) }).toEqual({ kind: String(kind), reached: true });
  }
  expect(html.length).toBeGreaterThan(40);
}, 300_000);
