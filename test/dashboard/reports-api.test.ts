import { automationEmailsMessage, overviewMessage } from '../../src/resources/reports/reports.schemas';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { makeWorld, type World } from './lib/world';

/** GET /reports/…: what the dashboard shows, for scripts (src/resources/reports). */
const { app, db } = setupApp();

let a: TestAccount;
let other: TestAccount;
let w: World;
let otherWorld: World;

beforeAll(async () => {
  [a, other] = await Promise.all([makeAccount(db, 'Reports'), makeAccount(db, 'Other')]);
  w = await makeWorld(db, a);
  otherWorld = await makeWorld(db, other);
});

describe('GET /reports/overview', () => {
  it('sums the sends of the window and the automation emails, with the rates', async () => {
    const res = await api(app, a).get('/reports/overview?days=30');
    expect(res.status).toBe(200);
    const o = expectShape(overviewMessage, res.body.message);
    expect(o.days).toBe(30);
    expect(o.time_zone).toBe('UTC');
    // The send of two days ago (12 queued, 10 delivered, 2 bounced, 6 opened, 2 human clicks, 1 complaint)
    // and the automation's six emails (6 delivered, 3 opened); the send of 40 days ago is outside.
    expect(o.totals).toEqual({ sends: 18, delivered: 16, unique_opens: 9, unique_clicks: 2, bounces: 2, complaints: 1 });
    expect(o.rates).toEqual({ unique_open: 0.5625, human_click: 0.125, bounce: 0.111111, complaint: 0.0625 });
    expect(o.complaint_level).toBe('over');
    expect(o.daily).toHaveLength(30);
    const today = new Date().toISOString().slice(0, 10);
    const twoDaysAgo = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
    expect(o.daily[29]).toEqual({ date: today, sends: 6, delivered: 6, unique_opens: 3, unique_clicks: 0, bounces: 0, complaints: 0 });
    expect(o.daily.find((d) => d.date === twoDaysAgo)).toEqual({ date: twoDaysAgo, sends: 12, delivered: 10, unique_opens: 6, unique_clicks: 2, bounces: 2, complaints: 1 });
    expect(o.latest_sends.map((s) => s.utr)).toEqual([w.send.utr, w.oldSend.utr]);
    expect(o.latest_sends[0]).toMatchObject({ triggered: 12, delivered: 10, unique_opens: 6, unique_clicks: 2, bounces: 2, complaints: 1 });
    expect(o.warnings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'dns', record: 'dkim', status: 'missing', sender_id: w.senderId }),
        expect.objectContaining({ type: 'dns', record: 'dmarc', status: 'mismatch' }),
        expect.objectContaining({ type: 'webhook', webhook_id: w.webhookId, state: 'failing' }),
        expect.objectContaining({ type: 'import', error: 'The file is not UTF-8' }),
      ]),
    );
    expect(o.warnings.filter((x) => x.type === 'dns')).toHaveLength(2);
  });

  it('reaches further back with more days, and counts days in the time zone asked for', async () => {
    const wide = (await api(app, a).get('/reports/overview?days=60')).body.message;
    expect(wide.totals).toMatchObject({ sends: 21, delivered: 19, unique_opens: 12 });
    const tokyo = (await api(app, a).get('/reports/overview?days=7&tz=Asia/Tokyo')).body.message;
    expect(tokyo.time_zone).toBe('Asia/Tokyo');
    expect(tokyo.daily[6].date).toBe(new Date(Date.now() + 9 * 3_600_000).toISOString().slice(0, 10));
    expect(tokyo.since).toMatch(/T15:00:00\.000000Z$/);
    expect(tokyo.totals.delivered).toBe(16);
  });

  it('a paused webhook is no warning; one disabled by its failures is', async () => {
    const b = await makeAccount(db, 'Hooks');
    const [paused, disabled] = await db('webhooks')
      .insert([
        { user_id: b.id, url: 'https://a.example.com/', secret: 's', is_active: 0 },
        { user_id: b.id, url: 'https://b.example.com/', secret: 's', is_active: 0, failing_since: db.fn.now() },
      ])
      .returning('id');
    const o = (await api(app, b).get('/reports/overview')).body.message;
    expect(o.warnings.map((x: { webhook_id: number; state: string }) => [x.webhook_id, x.state])).toEqual([[disabled.id, 'disabled']]);
    expect(paused.id).toBeLessThan(disabled.id);
    expect(o.totals).toEqual({ sends: 0, delivered: 0, unique_opens: 0, unique_clicks: 0, bounces: 0, complaints: 0 });
    expect(o.rates).toEqual({ unique_open: null, human_click: null, bounce: null, complaint: null });
    expect(o.complaint_level).toBe('ok');
  });

  it('a delivery route blocked for the account\'s mail is a warning while the block holds, and only for that account', async () => {
    const b = await makeAccount(db, 'Blocked');
    const c = await makeAccount(db, 'Not blocked');
    const event = (route: string, provider: string) => ({ user_id: b.id, type: 'route.blocked', data: JSON.stringify({ route, provider, subject: 'blocked' }) });
    await db('events').insert([event('ses', 'microsoft'), event('ses', 'microsoft'), event('own', 'yahoo'), event('gone', 'google')]);
    const hour = 3_600_000;
    await db('route_blocks').insert([
      { route: 'ses', provider: 'microsoft', since: new Date(Date.now() - hour), until: new Date(Date.now() + 23 * hour), last_error: '550 5.7.1 (S3150)' },
      { route: 'own', provider: 'yahoo', since: new Date(Date.now() - 25 * hour), until: new Date(Date.now() - hour), last_error: '553 [TSS09]' },
      { route: 'other', provider: 'google', since: new Date(), until: new Date(Date.now() + hour), last_error: null },
    ]);
    try {
      const o = expectShape(overviewMessage, (await api(app, b).get('/reports/overview')).body.message);
      // Once per block (two events of one block), the expired block and a block without this account's event left out.
      expect(o.warnings).toEqual([
        { type: 'route', route: 'ses', provider: 'microsoft', since: expect.any(String), until: expect.any(String), diagnostic: '550 5.7.1 (S3150)' },
      ]);
      expect((await api(app, c).get('/reports/overview')).body.message.warnings).toEqual([]);
    } finally {
      await db('route_blocks').whereIn('route', ['ses', 'own', 'other']).delete();
    }
  });

  it.each([
    ['days=0', { days: ['The days must be at least 1.'] }],
    ['days=367', { days: ['The days must not be greater than 366.'] }],
    ['days=abc', { days: ['The days must be an integer.'] }],
    ['tz=Mars/Olympus', { tz: ['The selected tz is invalid.'] }],
    ['tz=%2B01:00', { tz: ['The selected tz is invalid.'] }],
  ])('VAL on %s', async (query, errors) => {
    const res = await api(app, a).get(`/reports/overview?${query}`);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ status: 'failed', errors });
  });

  it('AUTH without keys, and wrong keys', async () => {
    const res = await api(app).get('/reports/overview');
    expect(res.status).toBe(401);
    expect(res.body.errors).toEqual({ PublicKey: ['The public key field is required.'], SecretKey: ['The secret key field is required.'] });
    const wrong = await api(app).get('/reports/overview').set({ PublicKey: a.public_key, SecretKey: 'sk_wrong' });
    expect(wrong.status).toBe(401);
  });
});

describe('GET /reports/automation', () => {
  it('each email with its counters, in order', async () => {
    const res = await api(app, a).get(`/reports/automation?utr=${w.automation.utr}`);
    expect(res.status).toBe(200);
    const m = expectShape(automationEmailsMessage, res.body.message);
    expect(m.emails.map((e) => [e.utr, e.subject])).toEqual(w.automation.emails.map((e) => [e.utr, e.subject]));
    expect(m.emails[0]).toMatchObject({ triggered: 4, delivered: 4, unique_opens: 2, total_opens: 2, unsubscribes: 1, bounces: 0 });
    expect(m.emails[1]).toMatchObject({ triggered: 2, delivered: 2, unique_opens: 1, unsubscribes: 0 });
  });

  it('another account’s automation, an unknown or a missing utr: NF1', async () => {
    for (const q of [`utr=${otherWorld.automation.utr}`, 'utr=00000000-0000-4000-8000-000000000000', 'utr=nope', '']) {
      const res = await api(app, a).get(`/reports/automation?${q}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'failed', errors: 'Record Not Found' });
    }
  });

  it('AUTH', async () => {
    expect((await api(app).get(`/reports/automation?utr=${w.automation.utr}`)).status).toBe(401);
  });
});

describe('GET /reports/kept-report', () => {
  it('the report a bounce came in, as received', async () => {
    const res = await api(app, a).get(`/reports/kept-report?event_id=${w.bounceEventId}`);
    expect(res.status).toBe(200);
    expect(res.body.message.raw).toContain('550 5.1.1 User unknown');
    const complaint = await api(app, a).get(`/reports/kept-report?event_id=${w.complaintEventId}`);
    expect(complaint.body.message.raw).toContain('Feedback-Type: abuse');
  });

  it('another account’s event, an event without a kept report, a non-id: NF1', async () => {
    const smtpBounce = Number(w.bounceEventId) - 1; // refused while sending: nothing was kept
    for (const id of [otherWorld.bounceEventId, String(smtpBounce), '99999999999', 'x1']) {
      const res = await api(app, a).get(`/reports/kept-report?event_id=${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'failed', errors: 'Record Not Found' });
    }
  });

  it('VAL without an event id; AUTH without keys', async () => {
    const res = await api(app, a).get('/reports/kept-report');
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual({ event_id: ['The event id field is required.'] });
    expect((await api(app).get(`/reports/kept-report?event_id=${w.bounceEventId}`)).status).toBe(401);
  });
});
