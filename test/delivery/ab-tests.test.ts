import { createHash, createHmac } from 'node:crypto';
import http, { type Server } from 'node:http';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { posteriors } from '../../src/ab/bayes';
import { secret } from '../../src/db/secrets';
import { api, setupApp } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeSender } from '../helpers/fixtures';
import { closeServers, listenLocal } from '../helpers/net';
import { createSend } from '../helpers/sends';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * A/B tests end to end (issue 19), with a real SMTP server, opens and clicks made by HTTP hits on
 * the tracking URLs the messages carry (and one by a real browser): the split, each recipient's
 * one variation, the decision on the evidence and by each inconclusive rule, a person's pick, the
 * release of the rest to the winner, the report and the events.
 *
 * The test's duration is at least a minute, so a test does not wait it out: once the decision is
 * queued (due `test_done_at + duration`, checked), it is made due now — the job runner's own tests
 * cover its clock.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', CLICK_BOT_WINDOW_SECONDS: '0' }, 'ab');
const rig = setupDelivery({ config, db });

let seq = 0;
/** A list of `n` contacts at a domain of its own. */
async function audience(n: number): Promise<{ list: number; emails: string[]; domain: string }> {
  seq += 1;
  const domain = `ab${seq}.test`;
  const list = await makeContactType(db, rig.account, `AB ${seq}`);
  const emails = Array.from({ length: n }, (_, i) => `r${String(i).padStart(4, '0')}@${domain}`);
  await makeContacts(db, rig.account, list, emails.map((email, i) => ({ email, first_name: `P${i}` })));
  return { list, emails, domain };
}

/** Form fields of an A/B test: `variations` are B, C … as `ab_variations[i][field]`. */
function abFields(type: string, variations: Array<Record<string, unknown>>, settings: Record<string, unknown> = {}): Record<string, unknown> {
  const fields: Record<string, unknown> = { ab_test_type: type, ...settings };
  variations.forEach((v, i) => {
    for (const [k, x] of Object.entries(v)) fields[`ab_variations[${i}][${k}]`] = x;
  });
  return fields;
}

async function abSend(list: number, fields: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return createSend(app, db, rig.account, { sender: rig.sender, group: rig.group, list }, { subject: 'Subject A', ...extra, ...fields });
}

const test = (sendId: number) => db('ab_tests').where({ single_send_id: sendId }).first();
const stats = async (utr: string) => {
  const res = await api(app, rig.account).get(`/single/send/stats?utr=${utr}`);
  expectSuccess(res);
  return res.body.message;
};

/** The messages of a domain the sink accepted, by recipient. */
async function messagesOf(domain: string): Promise<Map<string, ParsedMail[]>> {
  const all = await rig.sink.byRecipient();
  return new Map([...all].filter(([to]) => to.endsWith(`@${domain}`)));
}

/** Waits until `n` messages of the domain were accepted. */
async function waitForMessages(domain: string, n: number): Promise<Map<string, ParsedMail[]>> {
  await waitFor(`${n} messages to @${domain}`, async () => (rig.sink.accepted.filter((m) => m.to.endsWith(`@${domain}`)).length >= n ? true : undefined));
  return messagesOf(domain);
}

/** The test group has left the queue and its decision is queued: checks it is due `duration` after, and makes it due now. */
async function decisionNow(sendId: number): Promise<void> {
  const job = await waitFor('the decision to be queued', () => db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [sendId]).first());
  const t = await test(sendId);
  expect(new Date(job.next_attempt_at).getTime() - new Date(t.test_done_at).getTime()).toBe(t.duration_minutes * 60_000);
  await db('jobs').where({ id: job.id, user_id: job.user_id }).update({ next_attempt_at: db.fn.now() });
}

/** The split as its definition says, computed here from scratch: the ranking of a keyed hash, the first share dealt in turn. */
async function referenceSplit(utr: string, emails: string[], percentage: number, variations: number): Promise<Map<string, number>> {
  const key = createHmac('sha256', await secret(db, 'tracking')).update(`ab-split:${utr}`).digest('hex');
  const ranked = emails
    .map((e) => ({ e: e.toLowerCase(), h: createHash('md5').update(key + e.toLowerCase()).digest('hex') }))
    .sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : a.e < b.e ? -1 : 1));
  // The share, rounded, but one recipient per variation at least (and never more than everyone).
  const size = Math.min(emails.length, Math.max(Math.round((emails.length * percentage) / 100), variations));
  return new Map(ranked.slice(0, size).map((r, i) => [r.e, i % variations]));
}

/** Each recipient row's variation index as stored (test group and winner phase), by address. */
async function storedSplit(sendId: number, phase: number): Promise<Map<string, number>> {
  const rows = await db('deliveries as d')
    .join('single_send_variations as v', (j) => j.on('v.id', 'd.ab_variation_id').andOn('v.user_id', 'd.user_id'))
    .where({ 'd.single_send_id': sendId, 'd.ab_phase': phase })
    .select('d.email', 'v.idx');
  return new Map(rows.map((r: { email: string; idx: number }) => [r.email.toLowerCase(), r.idx]));
}

function sizes(split: Map<string, number>, k: number): number[] {
  const out = Array.from({ length: k }, () => 0);
  for (const v of split.values()) out[v] += 1;
  return out;
}

/** The pixel and the tracked links of a message, as paths on Herald. */
function tracking(mail: ParsedMail): { pixel: string; links: string[] } {
  const html = String(mail.html);
  const pixel = /http:\/\/herald\.test(\/t\/open\/[^"']+\.gif)/.exec(html)![1];
  const links = [...html.matchAll(/href="http:\/\/herald\.test(\/t\/click\/[0-9a-f]+)"/g)].map((m) => m[1]);
  return { pixel, links };
}

async function open(mail: ParsedMail): Promise<void> {
  const res = await request(app).get(tracking(mail).pixel);
  expect(res.status).toBe(200);
}

async function click(mail: ParsedMail, userAgent = 'Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0'): Promise<void> {
  const res = await request(app).get(tracking(mail).links[0]).set('User-Agent', userAgent);
  expect(res.status).toBe(302);
}

describe('a subject test', () => {
  let send: { utr: string; id: number };
  let people: Awaited<ReturnType<typeof audience>>;
  const SUBJECTS = ['Subject A', 'Subject B', 'Subject C'];

  beforeAll(async () => {
    people = await audience(61);
    send = await abSend(
      people.list,
      abFields('subject', [{ subject: 'Subject B' }, { subject: 'Subject C' }], { ab_test_percentage: 50, ab_winner_criteria: 'open', ab_duration_minutes: 30 }),
    );
  });

  it('sends the test group — round(61 × 50 %) = 31, dealt A, B, C in turn — one variation each, and holds the rest', async () => {
    const mails = await waitForMessages(people.domain, 31);
    await waitFor('the test to be noted done', async () => ((await test(send.id)).test_done_at ? true : undefined));
    const split = await storedSplit(send.id, 1);
    expect(split.size).toBe(31);
    expect(sizes(split, 3)).toEqual([11, 10, 10]);
    // What each recipient got is their variation's subject, once.
    expect(mails.size).toBe(31);
    for (const [to, got] of mails) {
      expect(got).toHaveLength(1);
      expect({ to, subject: got[0].subject }).toEqual({ to, subject: SUBJECTS[split.get(to)!] });
    }
    const held = await db('deliveries').where({ single_send_id: send.id, status: 'held' }).count<{ n: number }[]>({ n: '*' });
    expect(Number(held[0].n)).toBe(30);
    expect((await test(send.id)).status).toBe('testing');
    expect((await db('single_sends').where({ id: send.id }).first('status')).status).toBe(2);
  });

  it('is the split the definition gives: the same when computed again from scratch', async () => {
    expect(await storedSplit(send.id, 1)).toEqual(await referenceSplit(send.utr, people.emails, 50, 3));
  });

  it('sends the rest the variation people opened most, once it is best on the evidence', async () => {
    const mails = await messagesOf(people.domain);
    const split = await storedSplit(send.id, 1);
    // Everyone who got B opens it, twice (one unique open each); of A and C, one person each.
    const opened = [...mails].filter(([to]) => split.get(to) === 1);
    for (const [, [mail]] of opened) {
      await open(mail);
      await open(mail);
    }
    for (const idx of [0, 2]) await open(mails.get([...split].find(([, v]) => v === idx)![0])![0]);
    await decisionNow(send.id);
    await waitForSend(db, send.utr);
    const t = await test(send.id);
    // The rest was claimed to the winner as it went out; with the send completed, its claims no longer probe the test.
    expect(t).toMatchObject({ status: 'decided', winner: 1, decided_by: 'significant', releasing: false });
    const winnerId = (await db('single_send_variations').where({ single_send_id: send.id, idx: 1 }).first('id')).id;
    expect(await db('deliveries').where({ single_send_id: send.id, ab_phase: 2 }).groupBy('ab_variation_id').select('ab_variation_id', db.raw('count(*)::int AS n'))).toEqual([
      { ab_variation_id: winnerId, n: 30 },
    ]);
    const all = await messagesOf(people.domain);
    expect(all.size).toBe(61);
    for (const [to, got] of all) {
      expect({ to, n: got.length }).toEqual({ to, n: 1 });
      if (!split.has(to)) expect(got[0].subject).toBe('Subject B');
    }
    expect(await db('deliveries').where({ single_send_id: send.id, status: 'held' }).first()).toBeUndefined();
  });

  it('reports the variations as frozen at the decision, the phases apart, and the totals on the send', async () => {
    const s = await stats(send.utr);
    expect(s.triggered).toBe(61);
    expect(s.delivered).toBe(61);
    expect(s.unique_opens).toBe(12);
    expect(s.ab).toMatchObject({
      type: 'subject',
      test_percentage: 50,
      duration_minutes: 30,
      winner_criteria: 'open',
      confidence: 0.95,
      status: 'completed',
      test_size: 31,
      winner: 1,
      decided_by: 'significant',
    });
    expect(s.ab.variations.map((v: Record<string, unknown>) => [v.index, v.subject, v.recipients, v.delivered, v.unique_opens])).toEqual([
      [0, 'Subject A', 11, 11, 1],
      [1, 'Subject B', 10, 10, 10],
      [2, 'Subject C', 10, 10, 1],
    ]);
    const expected = posteriors([{ successes: 1, trials: 11 }, { successes: 10, trials: 10 }, { successes: 1, trials: 10 }]);
    s.ab.variations.forEach((v: { interval: number[]; probability_best: number; open_rate: number }, i: number) => {
      expect(v.interval[0]).toBeCloseTo(expected[i].interval[0], 12);
      expect(v.interval[1]).toBeCloseTo(expected[i].interval[1], 12);
      expect(v.probability_best).toBeCloseTo(expected[i].probabilityBest, 12);
    });
    expect(s.ab.variations[1].open_rate).toBe(1);
    expect(s.ab.variations[1].probability_best).toBeGreaterThan(0.999);
    expect(s.ab.phases.test).toMatchObject({ triggered: 31, delivered: 31, unique_opens: 12 });
    expect(s.ab.phases.winner).toMatchObject({ triggered: 30, delivered: 30, unique_opens: 0 });
    // Opens after the decision count in the totals and the test phase, not in the frozen variations.
    const late = (await messagesOf(people.domain)).get([...(await storedSplit(send.id, 1))].find(([, v]) => v === 0)![0])!;
    await open(late[0]);
    const after = await stats(send.utr);
    expect(after.ab.variations[0].unique_opens).toBe(1);
    expect(after.ab.phases.test.opens).toBe(s.ab.phases.test.opens + 1);
  });

  it('records every message event with its variation, and the decision as an account event', async () => {
    const delivered = await db('events').where({ single_send_id: send.id, type: 'delivered' }).select('email', 'data');
    expect(delivered).toHaveLength(61);
    const split = await storedSplit(send.id, 1);
    for (const e of delivered) expect({ e: e.email, v: e.data.variation }).toEqual({ e: e.email, v: split.get(e.email) ?? 1 });
    const opened = await db('events').where({ single_send_id: send.id, type: 'opened' }).select('data');
    expect(opened.every((e: { data: { variation?: number } }) => typeof e.data.variation === 'number')).toBe(true);
    const res = await api(app, rig.account).get(`/events?single_send_utr=${send.utr}&type=single_send.ab_decided`);
    expectSuccess(res);
    expect(res.body.message.events).toHaveLength(1);
    expect(res.body.message.events[0].data).toMatchObject({ winner: 1, decided_by: 'significant', released: 30 });
    expect(res.body.message.events[0].data.probability_best).toBeGreaterThan(0.999);
  });
});

describe('a design test decided by clicks', () => {
  let people: Awaited<ReturnType<typeof audience>>;
  let send: { utr: string; id: number };
  let server: Server | undefined;
  let browser: Browser | undefined;
  // The links' destination: a site on this machine, so the browser's redirect goes nowhere else.
  const seen: string[] = [];
  const site = http.createServer((req, res) => {
    seen.push(req.url!);
    res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>The shop</title>');
  });
  let shop = '';
  afterAll(async () => {
    await browser?.close();
    await closeServers(server, site);
  });

  beforeAll(async () => {
    shop = await listenLocal(site);
    people = await audience(40);
    send = await abSend(
      people.list,
      abFields('design', [{ template_id: 1, template_html: `<html><body><p>Design B</p><a href="${shop}/b">Shop B</a></body></html>` }], {
        ab_test_percentage: 50,
      }),
      { template_html: `<html><body><p>Design A</p><a href="${shop}/a">Shop A</a></body></html>` },
    );
  });

  it('sends each variation’s own design, with links of its own', async () => {
    const mails = await waitForMessages(people.domain, 20);
    const split = await storedSplit(send.id, 1);
    expect(sizes(split, 2)).toEqual([10, 10]);
    for (const [to, [mail]] of mails) expect({ to, html: String(mail.html).includes(split.get(to) === 1 ? 'Design B' : 'Design A') }).toEqual({ to, html: true });
    const links = await db('tracked_links as l')
      .join('single_send_variations as v', (j) => j.on('v.id', 'l.ab_variation_id').andOn('v.user_id', 'l.user_id'))
      .where('v.single_send_id', send.id)
      .orderBy('v.idx')
      .select('v.idx', 'l.url', 'l.single_send_id');
    expect(links).toEqual([
      { idx: 0, url: `${shop}/a`, single_send_id: null },
      { idx: 1, url: `${shop}/b`, single_send_id: null },
    ]);
  });

  it('does not let clicks flagged as a scanner’s move the decision', async () => {
    const mails = await messagesOf(people.domain);
    const split = await storedSplit(send.id, 1);
    const of = (idx: number) => [...mails].filter(([to]) => split.get(to) === idx).map(([, [m]]) => m);
    // Every A message is "clicked" by a link scanner; three B recipients click as people.
    for (const m of of(0)) await click(m, 'Mozilla/5.0 (compatible; Barracuda Sentinel)');
    for (const m of of(1).slice(0, 3)) await click(m);
    const s = await stats(send.utr);
    expect(s.ab.variations.map((v: { unique_clicks: number }) => v.unique_clicks)).toEqual([0, 3]);
    expect(s.ab.variations.map((v: { links: Array<{ url: string; total_clicks: number }> }) => v.links.map((l) => [l.url, l.total_clicks]))).toEqual([
      [[`${shop}/a`, 10]],
      [[`${shop}/b`, 3]],
    ]);
    // The send's links are its variations' added up.
    expect(s.links).toEqual([
      { url: `${shop}/a`, unique_clicks: 0, total_clicks: 10 },
      { url: `${shop}/b`, unique_clicks: 3, total_clicks: 3 },
    ]);
  });

  describeBrowser('a click in a real browser', () => {
    it('counts a person’s click on a tracked link of variation B', async () => {
      const base = await listenLocal((server = http.createServer(app)));
      const mails = await messagesOf(people.domain);
      const split = await storedSplit(send.id, 1);
      const [, [mail]] = [...mails].filter(([to]) => split.get(to) === 1)[5];
      browser = await launchChromium();
      const page = await browser.newPage();
      await page.setContent(String(mail.html).replace(/<img [^>]*\/t\/open\/[^>]*>/, '').replaceAll('http://herald.test', base));
      await Promise.all([page.waitForURL(`${shop}/b`), page.click('a')]);
      expect(await page.title()).toBe('The shop');
      expect(seen.filter((p) => p !== '/favicon.ico')).toEqual(['/b']);
      expect((await stats(send.utr)).ab.variations[1].unique_clicks).toBe(4);
    });
  });

  it('sends the rest design B, decided on people’s clicks', async () => {
    await decisionNow(send.id);
    await waitForSend(db, send.utr);
    expect(await test(send.id)).toMatchObject({ status: 'decided', winner: 1 });
    const all = await messagesOf(people.domain);
    expect(all.size).toBe(40);
    const split = await storedSplit(send.id, 1);
    for (const [to, got] of all) {
      expect(got).toHaveLength(1);
      if (!split.has(to)) expect(String(got[0].html)).toContain('Design B');
    }
  });
});

describe('a small audience', () => {
  it('the test group is one recipient per variation at least: 5 recipients at 20 % would be 1, and are 2, one each', async () => {
    const people = await audience(5);
    const send = await abSend(people.list, abFields('subject', [{ subject: 'Subject B' }], { ab_test_percentage: 20, ab_if_inconclusive: 'wait' }));
    const mails = await waitForMessages(people.domain, 2);
    await waitFor('the test to be noted done', async () => ((await test(send.id)).test_done_at ? true : undefined));
    const split = await storedSplit(send.id, 1);
    expect(sizes(split, 2)).toEqual([1, 1]);
    expect(split).toEqual(await referenceSplit(send.utr, people.emails, 20, 2));
    expect([...mails.keys()].sort()).toEqual([...split.keys()].sort());
    expect(await test(send.id)).toMatchObject({ status: 'testing', test_size: 2, audience_size: 5 });
    expect(await db('deliveries').where({ single_send_id: send.id, status: 'held' })).toHaveLength(3);
  });

  it('an audience that shrank below the variations by the time the send starts is all of it the test group: nobody is held, the send completes', async () => {
    const people = await audience(3);
    // Unsubscribed everywhere after the send was checked (its contacts were three): the fan-out drops them.
    expectSuccess(await api(app, rig.account).form('/global-unsubscribes/save', { email_address: people.emails.slice(1).join(',') }), 'Added Successfully');
    const send = await abSend(people.list, abFields('subject', [{ subject: 'Subject B' }, { subject: 'Subject C' }], { ab_if_inconclusive: 'wait' }));
    await waitForSend(db, send.utr);
    expect(await storedSplit(send.id, 1)).toEqual(new Map([[people.emails[0], 0]]));
    expect(await test(send.id)).toMatchObject({ test_size: 1, audience_size: 1 });
    expect((await messagesOf(people.domain)).size).toBe(1);
    expect(await db('deliveries').where({ single_send_id: send.id, status: 'held' })).toEqual([]);
  });
});

describe('clicks racing the outcome', () => {
  it('a click on a message the SMTP server has but Herald has not yet recorded as sent is a suspected bot: no open, no unique click, no say in the decision', async () => {
    const people = await audience(40);
    // Each message of this audience waits at DATA (the server has it whole, Herald not yet its
    // 250) until the test has clicked its link as received, if it is A's, or looked at it.
    const atData: Array<{ to: string; raw: string; answer: () => void }> = [];
    const others = rig.sink.data;
    rig.sink.data = (to, seen, raw) =>
      to[0].endsWith(`@${people.domain}`) ? new Promise((resolve) => atData.push({ to: to[0], raw, answer: () => resolve('accept') })) : others(to, seen, raw);
    config.clickBotWindowSeconds = 10;
    let send: { utr: string; id: number };
    try {
      send = await abSend(
        people.list,
        abFields('design', [{ template_id: 1, template_html: '<html><body><p>Design B</p><a href="https://shop.example/b">Shop B</a></body></html>' }], {
          ab_test_percentage: 50,
          ab_if_inconclusive: 'wait',
        }),
        { template_html: '<html><body><p>Design A</p><a href="https://shop.example/a">Shop A</a></body></html>' },
      );
      for (let answered = 0; answered < 20; answered += 1) {
        const held = await waitFor('a message waiting at DATA', () => atData.shift());
        const row = await db('deliveries').where({ single_send_id: send.id, email: held.to }).first('status', 'sent_at', 'ab_variation_id');
        expect(row).toMatchObject({ status: 'sending', sent_at: null });
        // Every A message is clicked, as a person's browser would (no scanner's User-Agent), before its outcome is written.
        if ((await storedSplit(send.id, 1)).get(held.to) === 0) await click(await simpleParser(held.raw));
        held.answer();
      }
    } finally {
      rig.sink.data = others;
      config.clickBotWindowSeconds = 0;
    }
    const clicks = await db('events').where({ single_send_id: send.id, type: 'clicked' }).select('email', 'data');
    expect(clicks).toHaveLength(10);
    for (const c of clicks) expect({ to: c.email, data: c.data }).toEqual({ to: c.email, data: { url: 'https://shop.example/a', suspected_bot: true, variation: 0 } });
    // A scanner's click implies no open.
    expect(await db('events').where({ single_send_id: send.id, type: 'opened' })).toEqual([]);
    const s = await stats(send.utr);
    expect(s).toMatchObject({ total_clicks: 10, unique_clicks: 0, unique_opens: 0 });
    expect(s.ab.variations.map((v: { unique_clicks: number; unique_opens: number }) => [v.unique_clicks, v.unique_opens])).toEqual([
      [0, 0],
      [0, 0],
    ]);
    // Ten clicks for A and none for B would be significant; without people's clicks the test is inconclusive and waits.
    await decisionNow(send.id);
    await waitFor('the test to wait', async () => ((await test(send.id)).status === 'waiting' ? true : undefined));
    expect(await test(send.id)).toMatchObject({ winner: null, decided_by: null });
    expect(rig.sink.accepted.filter((m) => m.to.endsWith(`@${people.domain}`))).toHaveLength(20);
  });
});

describe('a sender test', () => {
  it('sends each variation from its own verified sender', async () => {
    const other = await makeSender(db, rig.account);
    await db('senders').where({ id: other }).update({ from_email: 'team@other.test', from_name: 'The Team' });
    const people = await audience(10);
    const send = await abSend(people.list, abFields('sender', [{ sender_id: other }], { ab_test_percentage: 100 }));
    const mails = await waitForMessages(people.domain, 10);
    const split = await storedSplit(send.id, 1);
    expect(sizes(split, 2)).toEqual([5, 5]);
    for (const [to, [mail]] of mails) {
      expect({ to, from: mail.from?.value[0].address }).toEqual({ to, from: split.get(to) === 1 ? 'team@other.test' : 'news@acme.test' });
    }
    // A 100 % test: nothing is held, the send completes, and the decision is still made for the report.
    await waitForSend(db, send.utr);
    await decisionNow(send.id);
    await waitFor('the decision', async () => ((await test(send.id)).status === 'decided' ? true : undefined));
    const s = await stats(send.utr);
    expect(s.ab).toMatchObject({ status: 'completed', test_size: 10, decided_by: 'leader', winner: 0 });
    expect(s.ab.phases.winner.triggered).toBe(0);
    expect(rig.sink.accepted.filter((m) => m.to.endsWith(`@${people.domain}`))).toHaveLength(10);
  });
});

describe('an inconclusive test', () => {
  /** A test where B is ahead by one open of ten: the leader, but not best with 95 % (P ≈ 0.88). */
  async function closeRace(rule: string, criteria = 'open') {
    const people = await audience(40);
    const send = await abSend(
      people.list,
      abFields('subject', [{ subject: 'Subject B' }], { ab_test_percentage: 50, ab_winner_criteria: criteria, ab_if_inconclusive: rule }),
    );
    const mails = await waitForMessages(people.domain, 20);
    const split = await storedSplit(send.id, 1);
    const b = [...mails].find(([to]) => split.get(to) === 1)!;
    await open(b[1][0]);
    return { people, send, split };
  }

  async function restGot(domain: string, split: Map<string, number>): Promise<string[]> {
    const all = await messagesOf(domain);
    expect(all.size).toBe(40);
    return [...new Set([...all].filter(([to]) => !split.has(to)).map(([, [m]]) => m.subject!))];
  }

  it('send_leader: the rest gets the leader', async () => {
    const { people, send, split } = await closeRace('send_leader');
    await decisionNow(send.id);
    await waitForSend(db, send.utr);
    const t = await test(send.id);
    expect(t).toMatchObject({ winner: 1, decided_by: 'leader' });
    expect(t.result.variations[1].probability_best).toBeGreaterThan(0.5);
    expect(t.result.variations[1].probability_best).toBeLessThan(0.95);
    expect(await restGot(people.domain, split)).toEqual(['Subject B']);
  });

  it('send_original: the rest gets A, the send’s own', async () => {
    const { people, send, split } = await closeRace('send_original');
    await decisionNow(send.id);
    await waitForSend(db, send.utr);
    expect(await test(send.id)).toMatchObject({ winner: 0, decided_by: 'original' });
    expect(await restGot(people.domain, split)).toEqual(['Subject A']);
  });

  it('wait: the rest waits for a person, who picks', async () => {
    const { people, send, split } = await closeRace('wait');
    await decisionNow(send.id);
    await waitFor('the test to wait', async () => ((await test(send.id)).status === 'waiting' ? true : undefined));
    expect((await stats(send.utr)).ab).toMatchObject({ status: 'waiting', winner: null, decided_by: null });
    expect(rig.sink.accepted.filter((m) => m.to.endsWith(`@${people.domain}`))).toHaveLength(20);
    expectSuccess(await api(app, rig.account).form(`/single/send/ab/winner?utr=${send.utr}`, { variation: 0 }), 'Winner Selected Successfully');
    await waitForSend(db, send.utr);
    expect(await test(send.id)).toMatchObject({ status: 'decided', winner: 0, decided_by: 'manual' });
    expect(await restGot(people.domain, split)).toEqual(['Subject A']);
  });
});

describe('a person’s pick', () => {
  it('while the test runs: ends it early, and the queued decision changes nothing', async () => {
    const people = await audience(20);
    const send = await abSend(people.list, abFields('subject', [{ subject: 'Subject B' }], { ab_test_percentage: 50, ab_duration_minutes: 10080 }));
    await waitForMessages(people.domain, 10);
    await waitFor('the decision to be queued', () => db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first());
    expect((await test(send.id)).status).toBe('testing');
    expectSuccess(await api(app, rig.account).form('/single/send/ab/winner', { utr: send.utr, variation: 1 }), 'Winner Selected Successfully');
    await waitForSend(db, send.utr);
    expect(await test(send.id)).toMatchObject({ status: 'decided', winner: 1, decided_by: 'manual' });
    // The decision job, due in a week, finds the test decided and leaves it so.
    await decisionNow(send.id);
    await waitFor('the job to be done', async () =>
      (await db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first('status')).status === 'done' ? true : undefined,
    );
    expect(await test(send.id)).toMatchObject({ status: 'decided', winner: 1, decided_by: 'manual' });
    expect(await db('events').where({ single_send_id: send.id, type: 'single_send.ab_decided' })).toHaveLength(1);
    const all = await messagesOf(people.domain);
    expect([...all.values()].every((m) => m.length === 1)).toBe(true);
    expect(all.size).toBe(20);
  });

  it('with manual criteria: the test waits for a person once its group is sent, whatever the duration', async () => {
    const people = await audience(12);
    const send = await abSend(people.list, abFields('subject', [{ subject: 'Subject B' }], { ab_test_percentage: 50, ab_winner_criteria: 'manual' }));
    await waitForMessages(people.domain, 6);
    await waitFor('the test to wait', async () => ((await test(send.id)).status === 'waiting' ? true : undefined));
    expect(await db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first()).toBeUndefined();
    expectSuccess(await api(app, rig.account).form('/single/send/ab/winner', { utr: send.utr, variation: 1 }), 'Winner Selected Successfully');
    await waitForSend(db, send.utr);
    expect(rig.sink.accepted.filter((m) => m.to.endsWith(`@${people.domain}`))).toHaveLength(12);
  });
});

describe('deleting a send during its test', () => {
  it('cancels the held rest with the queued messages, and the decision does nothing', async () => {
    const people = await audience(20);
    const send = await abSend(people.list, abFields('subject', [{ subject: 'Subject B' }], { ab_test_percentage: 50 }));
    await waitForMessages(people.domain, 10);
    await waitFor('the decision to be queued', () => db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first());
    expectSuccess(await api(app, rig.account).delete(`/single/send/delete?utr=${send.utr}`), 'Deleted Successfully');
    expect(await db('deliveries').where({ single_send_id: send.id, status: 'held' }).first()).toBeUndefined();
    await decisionNow(send.id);
    await waitFor('the job to be done', async () =>
      (await db('jobs').where({ kind: 'ab_decision' }).whereRaw("(payload->>'singleSendId')::int = ?", [send.id]).first('status')).status === 'done' ? true : undefined,
    );
    expect((await test(send.id)).status).toBe('testing');
    expect(rig.sink.accepted.filter((m) => m.to.endsWith(`@${people.domain}`))).toHaveLength(10);
  });
});
