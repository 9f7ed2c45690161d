/**
 * Dashboard benchmark (issue "A dashboard in the browser"): every dashboard page, and GET
 * /reports/overview, answered within 300 ms for an account with 1,000,000 contacts and
 * 10,000,000 events — against Herald as `npm start` runs it (`node bin/herald.js serve`, the
 * built code, connected as the ordinary role that owns the benchmark's database), signed in
 * as a browser is (the sign-in form's token and cookie, then the session cookie).
 *
 * The account is written with SQL (generate_series), as the statistics consumer would have
 * left it: contacts in one big list and two small ones, 120 single sends over 180 days (ten of
 * a million recipients), five automations of five emails, their counters and hourly rows,
 * tracked links, the events (delivered, opened, clicked, bounced with reports' words,
 * complained, unsubscribed, dropped) spread over those sends and automations and over the
 * contacts' addresses, suppressions, unsubscribes, webhooks with their batches, imports.
 * Recipient rows are not written: no page reads them (the rollups stand in for them). Then
 * VACUUM ANALYZE, as autovacuum would have by then.
 *
 * Each page is fetched once to warm it (and make the sending domains' DKIM keys, which a first
 * look at a sender makes), then `--runs` times; its figure is the median of the response times
 * (the whole answer: session, data, rendering). PASS: every page's median ≤ 300 ms.
 *
 * The API's contact search (issue 34), measured the same way: GET /contacts/search for a part
 * of an address, a first name and a 2-character string (which no trigram serves), over the
 * account's 1,000,000 contacts and within the big list. PASS: each median ≤ 100 ms. Then one
 * GET /contacts/export of the big list (1,000,000 rows), read as a client would and counted:
 * its time, and Herald's peak RSS during it (PASS: ≤ 200 MB).
 *
 *   npx tsx bench/dashboard.ts [--contacts 1000000] [--events 10000000] [--runs 7] [--small] [--no-build] [--keep]
 *
 * --small: 100,000 contacts and 1,000,000 events (a quick look; not the issue's figures).
 * Prints a summary, writes bench/out/dashboard.json and exits 1 on a FAIL.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build, checksLine, createAccount, finishRun, log, runMain, startHerald, type Herald } from './lib/herald';
import { connect, dropDatabase, recreateDatabase, serverInfo } from './lib/pg';
import { cpuBusy, median, resetPeakRss, sampleRss, writeResult } from './lib/sample';
import { args } from './lib/setup';

const opts = args();
const SMALL = opts.has('small');
const num = (name: string, dflt: number) => (opts.has(name) ? Number(opts.get(name)) : dflt);
const CONTACTS = num('contacts', SMALL ? 100_000 : 1_000_000);
const EVENTS = num('events', SMALL ? 1_000_000 : 10_000_000);
const RUNS = Math.max(1, num('runs', 7));
const DB = 'herald_bench_dashboard';
const TARGET_MS = 300;
const SEARCH_TARGET_MS = 100;
const EXPORT_RSS_TARGET_MB = 200;
const SENDS = 120;
const BIG_SENDS = 10;
const AUTOMATIONS = 5;
const EMAILS_PER_AUTOMATION = 5;
const CHUNK = 1_000_000;

/** The account's data, in SQL: `$1` is the account id throughout. */
async function seed(url: string, userId: number): Promise<{ bigSend: string; automation: string; contactId: number; email: string; webhookId: number; bigList: number }> {
  const c = await connect(url);
  const q = (sql: string, params: unknown[] = [userId]) => c.query(sql, params);
  const t0 = Date.now();
  try {
    await q(`INSERT INTO contact_types (user_id, name) SELECT $1, n FROM unnest(ARRAY['Everyone', 'VIP', 'Press']) AS n`);
    const types = (await q(`SELECT id, name FROM contact_types WHERE user_id = $1 ORDER BY id`)).rows as Array<{ id: number; name: string }>;
    const gb = (await c.query(`SELECT id FROM countries WHERE iso_code = 'GB'`)).rows[0].id as number;
    for (let from = 1; from <= CONTACTS; from += CHUNK) {
      const to = Math.min(CONTACTS, from + CHUNK - 1);
      await c.query(
        `INSERT INTO contacts (user_id, contact_type_id, email, first_name, last_name, country_id, created_at)
         SELECT $1, $2, 'c' || g || '@bench.test', 'First' || g, 'Last' || g, $3, now() - (g % 365) * interval '1 day'
         FROM generate_series($4::int, $5::int) g`,
        [userId, types[0].id, gb, from, to],
      );
    }
    await q(`INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'c' || g || '@bench.test' FROM generate_series(1, 5000) g`, [userId, types[1].id]);
    await q(`INSERT INTO contacts (user_id, contact_type_id, email) SELECT $1, $2, 'p' || g || '@press.test' FROM generate_series(1, 300) g`, [userId, types[2].id]);
    log(`contacts: ${CONTACTS.toLocaleString('en-US')} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    await q(
      `INSERT INTO senders (user_id, from_name, from_email, reply_to_email, country_id, company_address, nickname, is_verified, utr)
       SELECT $1, 'Sender ' || g, 'news@domain' || g || '.bench.test', 'reply@bench.test', $2, '1 High Street', 'n' || g, 1, substr(md5(g::text), 1, 16)
       FROM generate_series(1, 5) g`,
      [userId, gb],
    );
    const sender = (await q(`SELECT min(id) AS id FROM senders WHERE user_id = $1`)).rows[0].id as number;
    await q(`INSERT INTO unsubscribe_groups (user_id, rand_id, group_name, description, is_display) SELECT $1, lpad((random() * 1e9)::bigint::text, 10, '0'), 'Group ' || g, 'About', 1 FROM generate_series(1, 5) g`);
    const group = (await q(`SELECT min(id) AS id FROM unsubscribe_groups WHERE user_id = $1`)).rows[0].id as number;
    await q(`INSERT INTO unsubscribe_group_recipients (user_id, unsubscribe_groups_id, email_address) SELECT $1, $2, 'c' || g || '@bench.test' FROM generate_series(1, 50000, 7) g`, [userId, group]);
    await q(`INSERT INTO global_unsubscribers (user_id, email_address) SELECT $1, 'c' || g || '@bench.test' FROM generate_series(3, 60000, 3) g`);
    await q(
      `INSERT INTO segments (user_id, contact_type_id, segment_name, select_field, select_operator, value, query_type)
       SELECT $1, $2, 'Segment ' || g, '[2]', '["contains"]', json_build_array(g::text)::jsonb, 'and' FROM generate_series(1, 3) g`,
      [userId, types[0].id],
    );

    // Single sends over 180 days; the first BIG_SENDS went to the whole big list.
    await q(
      `INSERT INTO single_sends (user_id, utr, template_id, sender_id, unsubscribe_group_id, single_send_name, subject, preheader, from_sender, reply_to,
                                 status, sent_at, completed_at, triggered, delivered, unique_opens, total_opens, unique_clicks, total_clicks, bounces,
                                 bounced_hard, bounced_soft, complaints, unsubscribes, dropped, deferred)
       SELECT $1, gen_random_uuid(), 1, $2, $3, 'Send ' || g, 'Subject ' || g, 'Pre', 'news@domain1.bench.test', 'reply@bench.test',
              3, now() - (g * 36) * interval '1 hour', now() - (g * 36 - 6) * interval '1 hour', n, n * 0.97, n * 0.3, n * 0.45, n * 0.05, n * 0.08, n * 0.03,
              n * 0.02, n * 0.01, n * 0.0005, n * 0.002, n * 0.01, n * 0.004
       FROM (SELECT g, CASE WHEN g <= $4 THEN $5::int ELSE 5000 END AS n FROM generate_series(1, $6::int) g) s`,
      [userId, sender, group, BIG_SENDS, CONTACTS, SENDS],
    );
    const sends = (await q(`SELECT id, utr FROM single_sends WHERE user_id = $1 ORDER BY id`)).rows as Array<{ id: number; utr: string }>;
    await q(
      `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, queued, delivered, opens, clicks, unsubscribes, unique_opens, unique_clicks, bounces, complaints)
       SELECT s.user_id, 'single_send', s.id, date_trunc('hour', s.sent_at) + h * interval '1 hour',
              CASE WHEN h = 0 THEN s.triggered ELSE 0 END, s.delivered / 72, s.total_opens / 72, s.total_clicks / 72, s.unsubscribes / 72, s.unique_opens / 72, s.unique_clicks / 72, s.bounces / 72, s.complaints / 72
       FROM single_sends s, generate_series(0, 71) h WHERE s.user_id = $1`,
    );
    await q(
      `INSERT INTO tracked_links (user_id, single_send_id, url, total_clicks, unique_clicks)
       SELECT s.user_id, s.id, 'https://example.com/page/' || l, s.total_clicks / 10, s.unique_clicks / 10 FROM single_sends s, generate_series(1, 10) l WHERE s.user_id = $1`,
    );

    await q(
      `INSERT INTO automations (user_id, utr, automation_for, automation_for_table, automation_name, unsubscribe_group_id, automation_type, status, live_at,
                                total_triggered, total_delivered, total_unique_opens, total_opens, total_bounces, total_unsubscribe, unique_clicks, total_clicks, complaints)
       SELECT $1, gen_random_uuid(), $2, 'contacts_', 'Drip ' || g, $3, 2, 1, now() - interval '180 days', 500000, 490000, 150000, 220000, 10000, 900, 20000, 31000, 150
       FROM generate_series(1, $4::int) g`,
      [userId, types[0].id, group, AUTOMATIONS],
    );
    const autos = (await q(`SELECT id, utr FROM automations WHERE user_id = $1 ORDER BY id`)).rows as Array<{ id: number; utr: string }>;
    await q(
      `INSERT INTO automation_schedules (user_id, automation_id, sender_id, subject, waiting_period, waiting_type, utr, template_id, preview_img,
                                         triggered, delivered, unique_opens, total_opens, unique_clicks, total_clicks, bounces, complaints, unsubscribes)
       SELECT a.user_id, a.id, $2, 'Step ' || e, e, 'days', gen_random_uuid(), 1, 'x.png', 100000, 98000, 30000, 44000, 4000, 6200, 2000, 30, 180
       FROM automations a, generate_series(1, $3::int) e WHERE a.user_id = $1`,
      [userId, sender, EMAILS_PER_AUTOMATION],
    );
    await q(
      `INSERT INTO message_stats_hourly (user_id, owner_type, owner_id, hour, queued, delivered, opens, clicks, unsubscribes, unique_opens, unique_clicks, bounces, complaints)
       SELECT a.user_id, 'automation', a.id, date_trunc('hour', now()) - h * interval '1 hour', 115, 113, 50, 7, 1, 35, 5, 2, (h % 20 = 0)::int
       FROM automations a, generate_series(0, 180 * 24 - 1) h WHERE a.user_id = $1`,
    );
    log(`sends and automations in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    // The events: per chunk, each row picks its send (or automation), its type and its address.
    const owners = { sends: sends.map((s) => s.id), autos: autos.map((a) => a.id) };
    for (let from = 1; from <= EVENTS; from += CHUNK) {
      const to = Math.min(EVENTS, from + CHUNK - 1);
      await c.query(
        `INSERT INTO events (user_id, type, email, single_send_id, automation_id, delivery_id, occurred_at, data)
         SELECT $1, t.type, 'c' || (1 + (g * 7919) % $2::int) || '@bench.test',
                CASE WHEN g % 10 <> 0 THEN ($3::int[])[1 + (g / 10) % $5::int] END,
                CASE WHEN g % 10 = 0 THEN ($4::int[])[1 + (g / 10) % $6::int] END,
                g, now() - ((g * 104729) % (180 * 86400)) * interval '1 second',
                CASE t.type
                  WHEN 'bounced' THEN jsonb_build_object('kind', CASE WHEN g % 3 = 0 THEN 'soft' ELSE 'hard' END, 'status', '5.1.1', 'diagnostic', '550 5.1.1 User unknown', 'source', 'dsn')
                  WHEN 'clicked' THEN jsonb_build_object('url', 'https://example.com/page/' || (g % 10), 'suspected_bot', g % 17 = 0)
                  WHEN 'complained' THEN jsonb_build_object('source', 'arf', 'feedback_type', 'abuse')
                  WHEN 'dropped' THEN jsonb_build_object('reason', 'unsubscribed')
                  ELSE '{}'::jsonb END
         FROM generate_series($7::bigint, $8::bigint) g
         CROSS JOIN LATERAL (SELECT CASE
           WHEN g % 100 < 50 THEN 'delivered' WHEN g % 100 < 80 THEN 'opened' WHEN g % 100 < 90 THEN 'clicked'
           WHEN g % 100 < 93 THEN 'bounced' WHEN g % 100 < 95 THEN 'unsubscribed' WHEN g % 100 < 97 THEN 'dropped'
           WHEN g % 1000 < 975 THEN 'deferred' ELSE 'complained' END AS type) t`,
        [userId, CONTACTS, owners.sends.slice(0, BIG_SENDS), owners.autos, BIG_SENDS, owners.autos.length, from, to],
      );
      log(`events: ${to.toLocaleString('en-US')} of ${EVENTS.toLocaleString('en-US')} (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }

    await q(
      `INSERT INTO suppressions (user_id, email, type, reason, diagnostic, source, single_send_id)
       SELECT $1, 'c' || g || '@bench.test', (ARRAY['bounce', 'complaint', 'manual'])[1 + g % 3], 'hard bounce', '550 5.1.1 User unknown', 'dsn', $2
       FROM generate_series(1, 100000) g`,
      [userId, sends[0].id],
    );
    await q(`INSERT INTO webhooks (user_id, url, secret, failing_since) SELECT $1, 'https://hooks' || g || '.bench.test/herald', 'whsec_x', CASE WHEN g = 1 THEN now() END FROM generate_series(1, 5) g`);
    const hook = (await q(`SELECT min(id) AS id FROM webhooks WHERE user_id = $1`)).rows[0].id as number;
    await q(
      `INSERT INTO webhook_deliveries (user_id, webhook_id, msg_id, type, event_ids, payload, status, attempt, last_status, last_error, created_at)
       SELECT $1, w.id, 'msg_' || g, 'delivered', ARRAY[g::bigint], '{}', CASE WHEN g % 50 = 0 THEN 'failed' ELSE 'delivered' END, 1 + g % 3,
              CASE WHEN g % 50 = 0 THEN 500 ELSE 204 END, CASE WHEN g % 50 = 0 THEN 'HTTP 500' END, now() - g * interval '1 minute'
       FROM webhooks w, generate_series(1, 20000) g WHERE w.user_id = $1`,
    );
    await q(
      `INSERT INTO contact_imports (user_id, contact_type_id, file_name, status, rows_read, inserted, updated, skipped, error, finished_at)
       SELECT $1, $2, 'import' || g || '.csv', CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'completed' END, 1000, 900, 90, 10, CASE WHEN g % 10 = 0 THEN 'not UTF-8' END, now()
       FROM generate_series(1, 50) g`,
      [userId, types[0].id],
    );
    // As autovacuum would have by the time anyone looks: statistics and the visibility map (index-only counts).
    await c.query('VACUUM ANALYZE');
    log(`seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    const contact = (await q(`SELECT id, email FROM contacts WHERE user_id = $1 AND email = 'c42@bench.test' AND contact_type_id = $2`, [userId, types[0].id])).rows[0];
    return { bigSend: sends[0].utr, automation: autos[0].utr, contactId: contact.id, email: contact.email, webhookId: hook, bigList: types[0].id };
  } finally {
    await c.end();
  }
}

/** Signs in as a browser would; returns the Cookie header of the session. */
async function signIn(baseUrl: string, account: { public_key: string; secret_key: string }): Promise<string> {
  const form = await fetch(`${baseUrl}/app`);
  const signInCookie = (form.headers.getSetCookie().find((c) => c.startsWith('herald_sign_in=')) ?? '').split(';')[0];
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const res = await fetch(`${baseUrl}/app/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { Cookie: signInCookie, 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: token, public_key: account.public_key, secret_key: account.secret_key }).toString(),
  });
  const session = (res.headers.getSetCookie().find((c) => c.startsWith('herald_session=')) ?? '').split(';')[0];
  if (res.status !== 303 || !session) throw new Error(`sign-in answered ${res.status}`);
  return `${session}; herald_tz=Europe%2FParis`;
}

async function timePage(baseUrl: string, headers: Record<string, string>, p: string): Promise<{ status: number; ms: number[] }> {
  const once = async () => {
    const t = process.hrtime.bigint();
    const res = await fetch(`${baseUrl}${p}`, { headers, redirect: 'manual' });
    await res.arrayBuffer();
    return { status: res.status, ms: Number(process.hrtime.bigint() - t) / 1e6 };
  };
  const warm = await once();
  const ms: number[] = [];
  for (let i = 0; i < RUNS; i += 1) ms.push((await once()).ms);
  return { status: warm.status, ms };
}

/**
 * GET /contacts/search shapes, all answered from the trigram index (a query has at least 3
 * characters): a part of an address, a first name (about a hundred matches each), and the
 * shortest query, 3 digits (a few thousand matches: the total counts them all).
 */
function searchQueries(bigList: number): Array<[label: string, path: string]> {
  const id = Math.min(4242, CONTACTS);
  return [
    ['part of an address', `/contacts/search?q=c${id}`],
    ['part of an address, in the big list', `/contacts/search?q=c${id}&contact_type_id=${bigList}`],
    ['a first name', `/contacts/search?q=First${id}`],
    ['3 characters', `/contacts/search?q=${String(id).slice(0, 3)}`],
  ];
}

/**
 * One GET /contacts/export of the big list, read as it arrives (lines counted, never held),
 * with Herald's peak RSS over it (the kernel's mark reset first, sampled as well).
 */
async function measureExport(herald: Herald, headers: Record<string, string>, bigList: number) {
  const reset = resetPeakRss(herald.pid);
  const rss = sampleRss(herald.pid);
  const t = process.hrtime.bigint();
  const res = await fetch(`${herald.baseUrl}/contacts/export?contact_type_id=${bigList}`, { headers });
  let lines = 0;
  let bytes = 0;
  let last = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    for (const byte of chunk) if (byte === 10) lines += 1;
    last = chunk[chunk.length - 1];
  }
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const mem = rss.stop();
  const peakMb = reset ? Math.max(mem.peakSampledMb, mem.vmHwmMb) : mem.peakSampledMb;
  return { status: res.status, rows: lines - 1, mb: Math.round(bytes / 1e5) / 10, whole: last === 10, seconds: Math.round(ms / 100) / 10, peak_rss_mb: peakMb, pass: res.status === 200 && peakMb <= EXPORT_RSS_TARGET_MB };
}

async function main(): Promise<void> {
  const started = Date.now();
  if (!opts.has('no-build')) build();
  const url = await recreateDatabase(DB);
  const account = await createAccount(url, 'Dashboard');
  const ids = await seed(url, account.id);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-bench-dashboard-'));
  let herald: Herald | undefined;
  try {
    herald = await startHerald({ databaseUrl: url, dataDir, env: { HERALD_MASTER_KEY: 'a'.repeat(64) } });
    const cookie = await signIn(herald.baseUrl, account);
    const pages = [
      '/app',
      `/app/sends/${ids.bigSend}`,
      '/app/automations',
      `/app/automations/${ids.automation}`,
      '/app/contacts',
      `/app/contacts/search?email=${encodeURIComponent(ids.email)}`,
      `/app/contacts/${ids.contactId}`,
      `/app/lists/${ids.bigList}`,
      `/app/lists/${ids.bigList}?q=c${Math.min(4242, CONTACTS)}`,
      '/app/contacts/imports.json',
      '/app/deliverability',
      '/app/deliverability?type=bounce&page=20',
      '/app/webhooks',
      `/app/webhooks/${ids.webhookId}`,
    ];
    const busy = await cpuBusy();
    const results: Array<{ page: string; status: number; median_ms: number; max_ms: number; pass: boolean }> = [];
    const measure = async (label: string, p: string, headers: Record<string, string>) => {
      const r = await timePage(herald!.baseUrl, headers, p);
      const m = Math.round(median(r.ms) * 10) / 10;
      results.push({ page: label, status: r.status, median_ms: m, max_ms: Math.round(Math.max(...r.ms) * 10) / 10, pass: m <= TARGET_MS && r.status < 400 });
      log(`${label}: ${r.status}, median ${m} ms (runs ${r.ms.map((x) => Math.round(x)).join(', ')})`);
    };
    for (const p of pages) await measure(p, p, { Cookie: cookie, Accept: p.endsWith('.json') ? 'application/json' : 'text/html' });
    const keys = { PublicKey: account.public_key, SecretKey: account.secret_key };
    await measure('GET /reports/overview?days=30 (API)', '/reports/overview?days=30&tz=Europe/Paris', keys);
    const search: Array<{ query: string; path: string; status: number; total: number; median_ms: number; max_ms: number; pass: boolean }> = [];
    for (const [label, p] of searchQueries(ids.bigList)) {
      const r = await timePage(herald.baseUrl, keys, p);
      const total = ((await (await fetch(`${herald.baseUrl}${p}`, { headers: keys })).json()) as { message: { pagination: { total: number } } }).message.pagination.total;
      const m = Math.round(median(r.ms) * 10) / 10;
      search.push({ query: label, path: p, status: r.status, total, median_ms: m, max_ms: Math.round(Math.max(...r.ms) * 10) / 10, pass: m <= SEARCH_TARGET_MS && r.status === 200 });
      log(`${p}: ${r.status}, ${total} found, median ${m} ms (runs ${r.ms.map((x) => Math.round(x)).join(', ')})`);
    }
    const exported = await measureExport(herald, keys, ids.bigList);
    log(`export: ${exported.status}, ${exported.rows} rows, ${exported.mb} MB in ${exported.seconds} s, peak RSS ${exported.peak_rss_mb} MB`);
    const db = await connect(url);
    const info = await serverInfo(db);
    const eventCount = Number((await db.query('SELECT count(*) AS n FROM events WHERE user_id = $1', [account.id])).rows[0].n);
    const contactCount = Number((await db.query('SELECT count(*) AS n FROM contacts WHERE user_id = $1', [account.id])).rows[0].n);
    await db.end();
    const pass = results.every((r) => r.pass) && search.every((r) => r.pass) && exported.pass;
    const checks = {
      every_page_answered: results.every((r) => r.status === 200),
      contacts: contactCount >= CONTACTS,
      events: eventCount >= EVENTS,
      search_found: search.every((r) => r.total > 0),
      export_whole: exported.whole && exported.rows === CONTACTS,
    };
    const file = writeResult('dashboard', {
      when: new Date().toISOString(),
      contacts: contactCount,
      events: eventCount,
      runs: RUNS,
      target_ms: TARGET_MS,
      cpu_busy_before: Math.round(busy * 1000) / 1000,
      server: info,
      pages: results,
      search_target_ms: SEARCH_TARGET_MS,
      search,
      export_rss_target_mb: EXPORT_RSS_TARGET_MB,
      export: exported,
      pass,
      checks,
    });
    process.stdout.write(
      `\nDashboard pages, ${contactCount.toLocaleString('en-US')} contacts and ${eventCount.toLocaleString('en-US')} events (median of ${RUNS}; target ≤ ${TARGET_MS} ms)\n` +
        results.map((r) => `  ${r.pass ? 'PASS' : 'FAIL'}  ${String(r.median_ms).padStart(7)} ms  (max ${r.max_ms})  ${r.page}`).join('\n') +
        `\nGET /contacts/search (median of ${RUNS}; target ≤ ${SEARCH_TARGET_MS} ms)\n` +
        search.map((r) => `  ${r.pass ? 'PASS' : 'FAIL'}  ${String(r.median_ms).padStart(7)} ms  (max ${r.max_ms})  ${r.query}: ${r.path} (${r.total} found)`).join('\n') +
        `\nGET /contacts/export of the big list (target: peak RSS ≤ ${EXPORT_RSS_TARGET_MB} MB)\n` +
        `  ${exported.pass ? 'PASS' : 'FAIL'}  ${exported.rows.toLocaleString('en-US')} rows, ${exported.mb} MB in ${exported.seconds} s, peak RSS ${exported.peak_rss_mb} MB` +
        `\n${pass ? 'PASS' : 'FAIL'}\n${checksLine(checks)}\n`,
    );
    finishRun(file, started, pass, checks);
  } finally {
    await herald?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    if (!opts.has('keep')) await dropDatabase(DB);
  }
}

runMain(main);
