/**
 * The README's dashboard screenshots, taken from the real pages: a demo account is written on
 * DATABASE_URL (migrated and seeded first, like `herald migrate`), Herald's app is served on a
 * loopback port, and headless Chromium (Debian's `chromium`, as the browser tests use) signs in
 * with the account's keys and photographs the overview and a send's report, then the workspace:
 * the design editor (a block design beside its preview), the send editor with a filled draft and
 * that draft previewed as one of its readers (made through the API over loopback, as a script would),
 * and the hosted signup form of a double opt-in form (signup-form.png).
 *
 *   DATABASE_URL=postgres://… npx tsx scripts/screenshots.ts [--out docs/images]
 *
 * The browser is looked for first, before anything touches the database: CHROMIUM_PATH, else
 * `chromium` (Debian: `apt-get install chromium`) or Chrome on PATH. Without one, or without
 * DATABASE_URL, it says so and exits 1.
 *
 * The demo's facts go through Herald's own event recorder (the statistics consumer keeps every
 * counter the pages read); each batch is then moved to the hour it stands for, so the charts
 * show days and hours instead of the minute the script ran.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createAccount } from '../src/accounts/accounts.service';
import { createApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createDb } from '../src/db/knex';
import { recordMessageEvents } from '../src/events/record';
import type { MessageEvent } from '../src/events/types';
import { createLogger } from '../src/logger';
import { outboxMailer } from '../src/mail/mailer';
import { ROOT } from '../src/paths';
import { prepareDatabase } from '../src/server';
import { countQueued } from '../src/statistics';
import type { Page } from 'playwright-core';
import { CHROMIUM, launchChromium, loopbackOnly } from '../test/helpers/browser';

const OUT = path.resolve(ROOT, process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1] : 'docs/images');
const HOUR = 3_600_000;

/** Records a batch of facts as if they happened `at`: the events and their hourly rollup row move there. */
async function recordAt(db: Knex, userId: number, at: Date, events: MessageEvent[], queued: Parameters<typeof countQueued>[1] = []): Promise<void> {
  if (events.length === 0) return;
  await db.transaction(async (trx) => {
    const { rows } = await trx.raw('SELECT coalesce(max(id), 0) AS last FROM events WHERE user_id = ?', [userId]);
    await countQueued(trx, queued);
    await recordMessageEvents(trx, events);
    await trx('events').where('user_id', userId).where('id', '>', rows[0].last).update({ occurred_at: at });
    await trx('message_stats_hourly')
      .where({ user_id: userId })
      .where('hour', trx.raw(`date_trunc('hour', now())`))
      .update({ hour: trx.raw(`date_trunc('hour', ?::timestamptz)`, [at]) });
  });
}

const pick = <T>(xs: T[], share: number, seed: number) => xs.filter((_, i) => ((i * 7919 + seed * 104729) % 1000) / 1000 < share);

/** What the demo made that the workspace's shots start from. */
interface Demo {
  /** The newest completed send (its report). */
  latest: string;
  list: number;
  sender: number;
  group: number;
  /** A reader the preview is shown as. */
  contact: number;
}

async function demo(db: Knex, userId: number): Promise<Demo> {
  const gb = (await db('countries').where({ iso_code: 'GB' }).first('id')).id as number;
  const [type] = await db('contact_types').insert({ user_id: userId, name: 'Newsletter readers' }).returning('id');
  const people = Array.from({ length: 1500 }, (_, i) => ({ user_id: userId, contact_type_id: type.id, email: `reader${i}@example.com`, first_name: `Reader ${i}`, country_id: gb }));
  // The reader the workspace's preview is shown as: a name the placeholders fill.
  Object.assign(people[3], { first_name: 'Maya', last_name: 'Okafor' });
  const contacts = (await db('contacts').insert(people).returning(['id', 'email'])) as Array<{ id: number; email: string }>;
  const [sender] = await db('senders')
    .insert({ user_id: userId, from_name: 'Acme News', from_email: 'news@acme.example', reply_to_email: 'hi@acme.example', country_id: gb, company_address: '1 High Street', nickname: 'acme', is_verified: 1, utr: randomBytes(8).toString('hex') })
    .returning('id');
  const [group] = await db('unsubscribe_groups').insert({ user_id: userId, rand_id: String(Date.now()).slice(-10), group_name: 'Newsletter', description: 'Monthly news', is_display: 1 }).returning('id');

  const plan = [
    { name: 'Autumn catalogue', subject: 'The autumn catalogue is here', daysAgo: 26, size: 1400, open: 0.42, click: 0.09 },
    { name: 'Member evening', subject: 'You are invited: member evening', daysAgo: 19, size: 900, open: 0.55, click: 0.14 },
    { name: 'November newsletter', subject: 'November: what is new at Acme', daysAgo: 12, size: 1500, open: 0.38, click: 0.07 },
    { name: 'Winter sale', subject: 'Winter sale: 30 % off until Sunday', daysAgo: 5, size: 1500, open: 0.47, click: 0.12 },
  ];
  let latest = '';
  for (const [n, s] of plan.entries()) {
    const utr = randomUUID();
    const sentAt = new Date(Date.now() - s.daysAgo * 24 * HOUR);
    const [row] = await db('single_sends')
      .insert({
        user_id: userId, utr, template_id: 2, sender_id: sender.id, unsubscribe_group_id: group.id, single_send_name: s.name, subject: s.subject,
        preheader: '', from_sender: 'news@acme.example', reply_to: 'hi@acme.example', status: 3, schedule_type: 0, triggered: s.size, sent_at: sentAt, completed_at: sentAt,
      })
      .returning('id');
    const links = (await db('tracked_links')
      .insert(['https://acme.example/catalogue', 'https://acme.example/offers', 'https://acme.example/stores'].map((url) => ({ user_id: userId, single_send_id: row.id, url })))
      .returning('id')) as Array<{ id: number }>;
    const rows = (await db('deliveries')
      .insert(contacts.slice(0, s.size).map((c) => ({ user_id: userId, single_send_id: row.id, contact_id: c.id, email: c.email, token: randomBytes(16).toString('hex'), status: 'sent', sent_at: sentAt })))
      .returning(['id', 'email'])) as Array<{ id: number; email: string }>;
    const ref = (d: { id: number; email: string }) => ({ userId, deliveryId: d.id, singleSendId: row.id, automationId: null, email: d.email });
    const bounced = new Set(pick(rows, 0.012, n).map((d) => d.id));
    const delivered = rows.filter((d) => !bounced.has(d.id));
    await recordAt(db, userId, sentAt, [
      ...delivered.map((d) => ({ type: 'delivered' as const, ...ref(d) })),
      ...rows.filter((d) => bounced.has(d.id)).map((d) => ({ type: 'bounced' as const, ...ref(d), data: { kind: 'hard' as const, status: '5.1.1', diagnostic: '550 5.1.1 Recipient address rejected: User unknown', source: 'dsn' } })),
    ]);
    const openers = pick(delivered, s.open, n + 1);
    const clickers = pick(openers, s.click / s.open, n + 2);
    // Opens and clicks fade over two days, as campaigns' do.
    const hours = [1, 2, 3, 4, 6, 9, 13, 20, 30, 45];
    for (const [i, h] of hours.entries()) {
      const share = (o: unknown[]) => o.filter((_, k) => k % hours.length === i);
      const at = new Date(sentAt.getTime() + h * HOUR);
      await recordAt(db, userId, at, [
        ...share(openers).map((d) => ({ type: 'opened' as const, ...ref(d as { id: number; email: string }) })),
        ...share(clickers).map((d, k) => ({ type: 'clicked' as const, ...ref(d as { id: number; email: string }), linkId: links[k % links.length].id, data: { url: 'https://acme.example/', suspected_bot: k % 11 === 0 } })),
      ]);
    }
    await recordAt(db, userId, new Date(sentAt.getTime() + 7 * HOUR), [
      ...pick(delivered, 0.0015, n + 3).map((d) => ({ type: 'complained' as const, ...ref(d), data: { source: 'arf', feedback_type: 'abuse' } })),
      ...pick(delivered, 0.004, n + 4).map((d) => ({ type: 'unsubscribed' as const, ...ref(d), data: { group_id: group.id } })),
    ]);
    latest = utr;
  }

  // A welcome series: a few new readers a day, each welcomed.
  const [auto] = await db('automations')
    .insert({ user_id: userId, utr: randomUUID(), automation_for: type.id, automation_for_table: 'contacts_', automation_name: 'Welcome series', unsubscribe_group_id: group.id, automation_type: 1, status: 1, live_at: new Date(Date.now() - 40 * 24 * HOUR) })
    .returning('id');
  const [email] = await db('automation_schedules')
    .insert({ user_id: userId, automation_id: auto.id, sender_id: sender.id, subject: 'Welcome to Acme', waiting_period: 0, waiting_type: 'instantly', utr: randomUUID(), template_id: 3, preview_img: 'template-welcome.png' })
    .returning('id');
  for (let day = 29; day >= 0; day -= 1) {
    const at = new Date(Date.now() - day * 24 * HOUR - 2 * HOUR);
    const batch = contacts.slice(day * 25, day * 25 + 12 + (day % 4) * 3);
    const rows = (await db('deliveries')
      .insert(batch.map((c) => ({ user_id: userId, automation_id: auto.id, automation_schedule_id: email.id, contact_id: c.id, email: c.email, token: randomBytes(16).toString('hex'), status: 'sent', sent_at: at })))
      .returning(['id', 'email'])) as Array<{ id: number; email: string }>;
    const ref = (d: { id: number; email: string }) => ({ userId, deliveryId: d.id, singleSendId: null, automationId: auto.id, email: d.email });
    // Queued as the automation engine counts them, then delivered and opened.
    const queued = [{ userId, source: { kind: 'automation_email' as const, automationId: auto.id, scheduleId: email.id }, n: rows.length }];
    await recordAt(db, userId, at, [...rows.map((d) => ({ type: 'delivered' as const, ...ref(d) })), ...pick(rows, 0.6, day).map((d) => ({ type: 'opened' as const, ...ref(d) }))], queued);
  }
  return { latest, list: type.id, sender: sender.id, group: group.id, contact: contacts[3].id };
}

const WORKSPACE_SHOTS = ['workspace-send-editor.png', 'workspace-design-editor.png', 'workspace-preview.png'];

/** The block design of the workspace's shots: what a person builds in the block editor. */
const SPRING_LETTER = {
  version: 1,
  settings: {},
  blocks: [
    { type: 'header', text: 'Acme', tagline: 'News from the shop on the High Street' },
    { type: 'heading', level: 1, text: 'Spring at Acme, ((first_name))' },
    { type: 'text', text: 'The garden shop opens on Saturday. Come early for seedlings, stay for coffee in the courtyard.\nMembers get 15 % off everything until Sunday.' },
    { type: 'button', text: 'See the programme', href: 'https://acme.example/spring' },
    { type: 'divider' },
    { type: 'footer', lines: ['((sender_name)) · ((sender_address))'], unsubscribe: { text: 'Unsubscribe or manage your preferences', href: '((unsubscribe_preferences))' } },
  ],
};

/** An API call of the demo account over loopback (what a script would do; the pages then show it). */
async function callApi(base: string, keys: Record<string, string>, route: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await fetch(`${base}${route}`, { method: 'POST', headers: { ...keys, 'Content-Type': 'application/json', Accept: 'application/json' }, body: JSON.stringify(body) });
  const answer = (await res.json()) as { status: string; message: Record<string, unknown>; errors?: unknown };
  if (res.status !== 200) throw new Error(`${route} answered ${res.status}: ${JSON.stringify(answer.errors ?? answer)}`);
  return answer.message;
}

/**
 * The workspace of issue 34: the design editor (a block design, its preview beside it), the
 * send editor holding a filled draft, and that draft previewed as one of its readers.
 */
async function workspace(page: Page, base: string, keys: Record<string, string>, made: Demo): Promise<void> {
  const design = await callApi(base, keys, '/designs/save', { template_name: 'Spring letter', format: 'blocks', source: JSON.stringify(SPRING_LETTER) });
  const { utr } = await callApi(base, keys, '/single/send/create', {
    draft: 1,
    single_send_name: 'Spring letter',
    subject: 'Spring at Acme, ((first_name))',
    preheader: 'The garden shop opens on Saturday',
    sender_id: made.sender,
    unsubscribe_group_id: made.group,
    recipient_id: [`contacts_${made.list}`],
    template_id: design.id,
    schedule_type: 0,
  });

  await page.goto(`${base}/app/designs/${String(design.id)}/edit`);
  const blocks = page.getByRole('region', { name: 'Blocks', exact: true });
  await blocks.getByRole('button', { name: /^Edit: 3\. Text/ }).click();
  await page.frameLocator('iframe[title*="as a recipient sees it"]:visible').getByRole('heading', { name: 'Spring at Acme, Jane' }).waitFor();
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(OUT, 'workspace-design-editor.png') });

  await page.goto(`${base}/app/sends/${String(utr)}/edit`);
  await page.getByRole('heading', { name: 'Edit: Spring letter' }).waitFor();
  // The message, its sender and its recipients with their count: the form's first three parts.
  await page.screenshot({ path: path.join(OUT, 'workspace-send-editor.png'), fullPage: true, clip: { x: 0, y: 0, width: 1280, height: 1640 } });

  await page.goto(`${base}/app/sends/${String(utr)}?contact_id=${made.contact}#preview`);
  await page.frameLocator('iframe[title="The email at desktop width"]').getByRole('heading', { name: 'Spring at Acme, Maya' }).waitFor();
  await page.frameLocator('iframe[title="The email at phone width"]').getByRole('heading', { name: 'Spring at Acme, Maya' }).waitFor();
  await page.getByRole('region', { name: 'Preview', exact: true }).scrollIntoViewIfNeeded();
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(OUT, 'workspace-preview.png') });
}

/**
 * The hosted signup form of issue 35 (`/subscribe/<public id>`), as a visitor sees it: a double
 * opt-in form of the demo's list with two fields and a consent text, made through the API.
 */
async function signupForm(page: Page, base: string, keys: Record<string, string>, made: Demo): Promise<void> {
  const form = await callApi(base, keys, '/forms/save', {
    name: 'The Acme newsletter',
    contact_type_ids: [made.list],
    fields: [
      { field_name: 'email', label: 'Email address' },
      { field_name: 'first_name', label: 'First name' },
    ],
    double_opt_in: 1,
    consent_text: 'Yes, send me the Acme newsletter about once a month. I can unsubscribe at any time.',
    confirmation_sender_id: made.sender,
  });
  await page.setViewportSize({ width: 760, height: 470 });
  await page.goto(`${base}/subscribe/${String(form.public_id)}`);
  await page.getByRole('heading', { name: 'The Acme newsletter' }).waitFor();
  // Filled in as a visitor does it, before pressing Subscribe.
  await page.getByRole('textbox', { name: 'Email address' }).fill('maya.okafor@example.com');
  await page.getByRole('textbox', { name: 'First name' }).fill('Maya');
  await page.getByRole('checkbox').check();
  await page.getByRole('checkbox').blur();
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(OUT, SIGNUP_SHOT) });
  await page.setViewportSize({ width: 1280, height: 900 });
}

const SIGNUP_SHOT = 'signup-form.png';

/** Why the script cannot run here (no browser, no database), or null. */
function missing(): string | null {
  if (!CHROMIUM) return 'no Chromium found: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH to a Chromium or Chrome executable';
  try {
    fs.accessSync(CHROMIUM, fs.constants.X_OK);
  } catch {
    return `CHROMIUM_PATH=${CHROMIUM} is not an executable file: install Chromium (Debian: apt-get install chromium) or point CHROMIUM_PATH at one`;
  }
  if (!process.env.DATABASE_URL) return 'DATABASE_URL must name a database the screenshots may write a demo account into';
  return null;
}

async function main(): Promise<void> {
  const why = missing();
  if (why) {
    process.stderr.write(`npm run screenshots: ${why}. Nothing was written.\n`);
    process.exitCode = 1;
    return;
  }
  const url = process.env.DATABASE_URL!;
  const logger = createLogger('silent');
  const db = createDb({ url, logger });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-screenshots-'));
  let listening: Server | undefined;
  try {
    await prepareDatabase(db, logger);
    const account = await createAccount(db, { name: 'Acme', email: `demo.${Date.now()}@acme.example` });
    const made = await demo(db, account.id);
    const config = loadConfig({ DATABASE_URL: url, DATA_DIR: dataDir, LOG_LEVEL: 'silent', HERALD_MASTER_KEY: randomBytes(32).toString('hex') });
    const app = createApp({ config, db, logger, mailer: outboxMailer(path.join(dataDir, 'outbox')) });
    listening = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => listening!.once('listening', resolve));
    const base = `http://127.0.0.1:${(listening.address() as AddressInfo).port}`;
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/London', colorScheme: 'light', deviceScaleFactor: 1 });
      const stopped = await loopbackOnly(context);
      const page = await context.newPage();
      await page.goto(`${base}/app`);
      await page.fill('input[name="public_key"]', account.public_key);
      await page.fill('input[name="secret_key"]', account.secret_key);
      await Promise.all([page.waitForURL(`${base}/app`), page.click('button:has-text("Sign in")')]);
      fs.mkdirSync(OUT, { recursive: true });
      await page.waitForTimeout(300);
      await page.screenshot({ path: path.join(OUT, 'dashboard-overview.png'), fullPage: true });
      await page.goto(`${base}/app/sends/${made.latest}`);
      await page.waitForTimeout(300);
      await page.screenshot({ path: path.join(OUT, 'dashboard-send-report.png'), fullPage: true });
      await workspace(page, base, { PublicKey: account.public_key, SecretKey: account.secret_key }, made);
      await signupForm(page, base, { PublicKey: account.public_key, SecretKey: account.secret_key }, made);
      if (stopped.length) throw new Error(`requests off loopback were stopped: ${stopped.join(', ')}`);
      process.stdout.write(`wrote ${path.relative(ROOT, OUT)}/: dashboard-overview.png, dashboard-send-report.png, ${WORKSPACE_SHOTS.join(', ')}, ${SIGNUP_SHOT} (account ${account.id})\n`);
    } finally {
      await browser.close();
    }
  } finally {
    await new Promise<void>((resolve) => (listening ? listening.close(() => resolve()) : resolve()));
    await db.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});
