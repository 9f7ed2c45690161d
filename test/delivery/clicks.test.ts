import http, { type Server } from 'node:http';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { clickToken } from '../../src/recipient-token';
import { secret } from '../../src/db/secrets';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { describeBrowser, launchChromium } from '../helpers/browser';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { closeServers, listenLocal } from '../helpers/net';
import { createSend } from '../helpers/sends';
import type { SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * Click tracking end to end: links rewritten once per send, each recipient's own signed
 * /t/click/ URL, the redirect only to the message's own links, `clicked` events (and the
 * `opened` a click implies), unique counts that leave scanners out, per-link statistics, and a
 * real browser following a link from the message to its destination.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50', CLICK_BOT_WINDOW_SECONDS: '0' }, 'clicks');
const rig = setupDelivery({ config, db });
let sink: SmtpSink;
let a: TestAccount;
let sender: number;
let group: number;
beforeAll(() => {
  ({ sink, account: a, sender, group } = rig);
});

const SHOP = 'https://shop.example.com/sale?utm_source=herald&item=1';
const BLOG = 'https://blog.example.com/post/1';
const DESIGN = `<html><body>
  <p>Hello ((first_name))</p>
  <a id="shop" href="https://shop.example.com/sale?utm_source=herald&amp;item=1">Sale</a>
  <a href='${BLOG}'>Blog</a>
  <a href="${BLOG}">Blog again</a>
  <a href="mailto:help@example.com">Mail us</a>
  <a href="https://private.example.com/" data-herald-notrack>Not tracked</a>
  <a href="https://profile.example.com/?who=((email))">Per recipient</a>
  <a href="((unsubscribe_preferences))">Preferences</a>
</body></html>`;

async function send(list: number, name: string, html = DESIGN): Promise<string> {
  const { utr } = await createSend(app, db, a, { sender, group, list }, { template_html: html, single_send_name: name, subject: 'Sale', preheader: 'Offers' });
  await waitForSend(db, utr);
  return utr;
}

async function messageTo(email: string): Promise<{ html: string; text: string; links: Map<string, string> }> {
  const mail = await waitFor(`the message to ${email}`, async () => (await sink.byRecipient()).get(email)?.[0]);
  const html = String(mail.html);
  const links = new Map<string, string>();
  for (const m of html.matchAll(/<a [^>]*href=(["'])(.*?)\1[^>]*>([^<]*)<\/a>/g)) links.set(m[3], m[2]);
  return { html, text: String(mail.text), links };
}

const path = (url: string) => url.replace('http://herald.test', '');
const eventsOf = (email: string) =>
  db('events').where({ user_id: a.id, email }).whereIn('type', ['opened', 'clicked']).orderBy('id').select('type', 'data');

describe('click tracking', () => {
  let utr: string;

  beforeAll(async () => {
    const list = await makeContactType(db, a, 'Clickers');
    await makeContacts(db, a, list, [{ email: 'ada@example.com', first_name: 'Ada' }, { email: 'bob@example.com' }, { email: 'cy@example.com' }]);
    utr = await send(list, 'Clicks');
  });

  it('rewrites every http(s) link to the recipient’s own /t/click/ URL, once per URL, and leaves the rest alone', async () => {
    const ada = await messageTo('ada@example.com');
    const bob = await messageTo('bob@example.com');
    const clickUrl = /^http:\/\/herald\.test\/t\/click\/[0-9a-f]{68}$/;
    for (const text of ['Sale', 'Blog', 'Blog again']) expect(ada.links.get(text)).toMatch(clickUrl);
    // The same URL twice is one tracked link (same link id), and each recipient has their own token.
    expect(ada.links.get('Blog')).toBe(ada.links.get('Blog again'));
    expect(ada.links.get('Sale')).not.toBe(bob.links.get('Sale'));
    expect(ada.links.get('Mail us')).toBe('mailto:help@example.com');
    expect(ada.links.get('Not tracked')).toBe('https://private.example.com/');
    expect(ada.links.get('Per recipient')).toBe('https://profile.example.com/?who=ada@example.com');
    expect(ada.links.get('Preferences')).toMatch(/^http:\/\/herald\.test\/unsubscribe\/[0-9a-f]{56}$/);
    // The text part carries the same tracked links.
    expect(ada.text).toContain(ada.links.get('Sale'));
    const links = await db('tracked_links').where({ user_id: a.id }).orderBy('id').pluck('url');
    expect(links).toEqual([SHOP, BLOG]);
  });

  it('redirects to the link (302) and records `clicked`, with the `opened` a first click implies', async () => {
    const ada = await messageTo('ada@example.com');
    const res = await request(app).get(path(ada.links.get('Sale')!));
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(SHOP);
    expect(await eventsOf('ada@example.com')).toEqual([
      { type: 'opened', data: { via: 'click' } },
      { type: 'clicked', data: { url: SHOP, suspected_bot: false } },
    ]);
    // Again, and another link: clicks only (the message is opened already).
    expect((await request(app).get(path(ada.links.get('Sale')!))).status).toBe(302);
    expect((await request(app).get(path(ada.links.get('Blog')!))).headers.location).toBe(BLOG);
    expect((await eventsOf('ada@example.com')).map((e) => e.type)).toEqual(['opened', 'clicked', 'clicked', 'clicked']);
  });

  it('a pixel open before the click means no extra `opened`', async () => {
    const bob = await messageTo('bob@example.com');
    const pixel = /src="http:\/\/herald\.test(\/t\/open\/[0-9a-f]{56}\.gif)"/.exec(bob.html)![1];
    expect((await request(app).get(pixel)).status).toBe(200);
    expect((await request(app).get(path(bob.links.get('Blog')!))).status).toBe(302);
    expect((await eventsOf('bob@example.com')).map((e) => [e.type, e.data])).toEqual([
      ['opened', {}],
      ['clicked', { url: BLOG, suspected_bot: false }],
    ]);
  });

  it('flags scanners (by User-Agent, or within CLICK_BOT_WINDOW_SECONDS of delivery) and leaves them out of unique counts', async () => {
    const cy = await messageTo('cy@example.com');
    const scanner = await request(app).get(path(cy.links.get('Sale')!)).set('User-Agent', 'Mozilla/5.0 (compatible; Barracuda Sentinel)');
    expect(scanner.status).toBe(302);
    config.clickBotWindowSeconds = 3600;
    try {
      expect((await request(app).get(path(cy.links.get('Blog')!))).status).toBe(302);
    } finally {
      config.clickBotWindowSeconds = 0;
    }
    // A scanner's click implies no open.
    expect(await eventsOf('cy@example.com')).toEqual([
      { type: 'clicked', data: { url: SHOP, suspected_bot: true } },
      { type: 'clicked', data: { url: BLOG, suspected_bot: true } },
    ]);
  });

  it('GET /single/send/stats counts clicks in total and unique, per link too (unclicked links with zeros)', async () => {
    const stats = (await api(app, a).get(`/single/send/stats?utr=${utr}`)).body.message;
    // ada: Sale ×2, Blog; bob: Blog; cy: Sale and Blog, both scanners.
    expect(stats).toMatchObject({ total_clicks: 6, unique_clicks: 2, unique_opens: 2, total_opens: 2 });
    expect(stats.links).toEqual([
      { url: SHOP, unique_clicks: 1, total_clicks: 3 },
      { url: BLOG, unique_clicks: 2, total_clicks: 3 },
    ]);
    expect(stats.timeline.reduce((n: number, h: { clicks: number }) => n + h.clicks, 0)).toBe(6);
    const events = (await api(app, a).get(`/events?type=clicked&single_send_utr=${utr}`)).body.message.events;
    expect(events).toHaveLength(6);
    expect(events[0]).toMatchObject({ type: 'clicked', email: 'ada@example.com', single_send_utr: utr, data: { url: SHOP, suspected_bot: false } });
  });

  it('refuses forged and altered tokens (404, no redirect, nothing recorded)', async () => {
    const ada = await messageTo('ada@example.com');
    const token = ada.links.get('Sale')!.split('/').pop()!;
    const list = await makeContactType(db, a, 'Other send');
    await makeContacts(db, a, list, [{ email: 'zed@example.com' }]);
    await send(list, 'Other', '<html><body><a href="https://elsewhere.example/">x</a></body></html>');
    const before = await db('events').where({ user_id: a.id }).count<{ count: string }[]>('* as count');
    const flipped = token.slice(0, -1) + (token.endsWith('0') ? '1' : '0');
    const otherLink = token.slice(0, 24) + (BigInt('0x' + token.slice(24, 36)) + 1n).toString(16).padStart(12, '0') + token.slice(36);
    for (const bad of [flipped, otherLink, token.slice(0, 56), 'not-a-token', 'f'.repeat(68)]) {
      const res = await request(app).get(`/t/click/${bad}`);
      expect(res.status).toBe(404);
      expect(res.headers.location).toBeUndefined();
      expect(res.headers['content-type']).toMatch(/text\/html/);
    }
    // Correctly signed tokens (only the installation's key makes one) that pair this message with
    // a link of another send, or name the row under another account, still never redirect.
    const foreign = await db('tracked_links').where({ user_id: a.id, url: 'https://elsewhere.example/' }).first('id');
    const delivery = await db('deliveries').where({ user_id: a.id, email: 'ada@example.com' }).first('id');
    const key = await secret(db, 'tracking');
    const other = await makeAccount(db);
    const sale = (await db('tracked_links').where({ user_id: a.id, url: SHOP }).first('id')).id;
    for (const ref of [
      { deliveryId: Number(delivery.id), userId: a.id, linkId: Number(foreign.id) },
      { deliveryId: Number(delivery.id), userId: other.id, linkId: Number(sale) },
    ]) {
      const res = await request(app).get(`/t/click/${clickToken(key, ref)}`);
      expect(res.status).toBe(404);
      expect(res.headers.location).toBeUndefined();
    }
    const after = await db('events').where({ user_id: a.id }).count<{ count: string }[]>('* as count');
    expect(after[0].count).toBe(before[0].count);
  });
});

describe('TRACK_CLICKS', () => {
  it('leaves links as written when turned off', async () => {
    const list = await makeContactType(db, a, 'Untracked');
    await makeContacts(db, a, list, [{ email: 'dee@example.com' }]);
    config.trackClicks = false;
    try {
      await send(list, 'Untracked');
    } finally {
      config.trackClicks = true;
    }
    const dee = await messageTo('dee@example.com');
    expect(dee.links.get('Sale')).toBe('https://shop.example.com/sale?utm_source=herald&amp;item=1');
    expect(dee.links.get('Blog')).toBe(BLOG);
  });
});

describeBrowser('a click in a real browser', () => {
  let server: Server;
  let site: Server;
  let browser: Browser;
  afterAll(async () => {
    await browser?.close();
    await closeServers(server, site);
  });

  it('follows the tracked link from the message to its destination and records the click', async () => {
    const base = await listenLocal((server = http.createServer(app)));
    const seen: string[] = [];
    const siteBase = await listenLocal(
      (site = http.createServer((req, res) => {
        seen.push(req.url!);
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>The shop</title><h1>Welcome</h1>');
      })),
    );
    const list = await makeContactType(db, a, 'Browser');
    await makeContacts(db, a, list, [{ email: 'eve@example.com' }]);
    await send(list, 'Browser', `<html><body><a id="go" href="${siteBase}/landing?x=1&amp;y=2">Go shopping</a></body></html>`);
    const eve = await messageTo('eve@example.com');
    browser = await launchChromium();
    const page = await browser.newPage();
    // The message as a mail client shows it with images blocked (no pixel), Herald's PUBLIC_URL
    // pointed at this server.
    await page.setContent(eve.html.replace(/<img [^>]*\/t\/open\/[^>]*>/, '').replaceAll('http://herald.test', base));
    await Promise.all([page.waitForURL(`${siteBase}/landing?x=1&y=2`), page.click('#go')]);
    expect(await page.title()).toBe('The shop');
    expect(seen.filter((p) => p !== '/favicon.ico')).toEqual(['/landing?x=1&y=2']);
    expect(await eventsOf('eve@example.com')).toEqual([
      { type: 'opened', data: { via: 'click' } },
      { type: 'clicked', data: { url: `${siteBase}/landing?x=1&y=2`, suspected_bot: false } },
    ]);
  });
});
