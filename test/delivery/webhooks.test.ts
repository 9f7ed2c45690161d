import { recordAccountEvent } from '../../src/events/account-events';
import { smtpMailer } from '../../src/mail/mailer';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { startDnsServer } from '../helpers/dns';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp';
import { waitFor } from '../helpers/wait';
import { startReceiver, type Hit, type Receiver } from '../helpers/webhook-receiver';
import { runWorker, waitForSend } from '../helpers/worker';

/**
 * Webhook delivery by the worker as production runs it (src/webhooks/dispatch.ts), to real HTTP
 * receivers that verify every request with the `standardwebhooks` package: the events of a real
 * send (through a real SMTP server), batched by type, signed; retries with the same webhook-id
 * while a receiver fails, is down or does not answer; giving up; disabling an endpoint that has
 * failed for too long; an address refused at delivery time. (A worker killed mid-request:
 * test/faults/webhook-crash.test.ts.)
 */
const { app, db, config } = setupApp(
  {
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_BASE_MS: '200',
    WEBHOOK_MAX_ATTEMPTS: '6',
    WEBHOOK_TIMEOUT_MS: '1500',
    WORKER_POLL_MS: '50',
    RETRY_BASE_MS: '0',
    MAX_ATTEMPTS: '1',
  },
  'webhooks',
);
let sink: SmtpSink;
const receivers: Receiver[] = [];

beforeAll(async () => {
  sink = await startSmtpSink();
});
// Two workers side by side: every "exactly these requests" below also shows that two workers never
// send one batch at once (claims take rows with SKIP LOCKED and a lease).
runWorker({ config, db, mailer: () => smtpMailer(sink.url, { poolSize: 2 }) });
runWorker({ config, db, mailer: () => smtpMailer(sink.url, { poolSize: 2 }) });
afterAll(async () => {
  await sink.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function saveWebhook(a: TestAccount, r: Receiver | string, fields: Record<string, unknown> = {}): Promise<number> {
  const res = await api(app, a).form('/webhooks/save', { url: typeof r === 'string' ? r : r.url, ...fields });
  expectSuccess(res);
  if (typeof r !== 'string') r.secret = res.body.message.secret;
  return res.body.message.id;
}

async function deliveries(a: TestAccount, id: number) {
  const res = await api(app, a).get(`/webhooks/deliveries?id=${id}`);
  expectSuccess(res);
  return res.body.message.deliveries as Array<{ msg_id: string; status: string; attempt: number; error: string | null; event_ids: number[]; http_status: number | null }>;
}

/** Every event id the receiver was told about, from requests that verified. */
function eventIds(hits: Hit[]): number[] {
  return hits.flatMap((h) => h.payload.data.events.map((e) => e.id as number));
}

function notify(a: TestAccount, name: string) {
  return recordAccountEvent({ db }, a.id, 'sender.verified', `Sender verified: ${name}`, { sender: name });
}

describe('the events of a send', () => {
  let a: TestAccount;
  let all: Receiver;
  let onlyDelivered: Receiver;
  let utr: string;

  beforeAll(async () => {
    a = await makeAccount(db, 'Hooked');
    all = await receiver();
    onlyDelivered = await receiver();
    await saveWebhook(a, all);
    await saveWebhook(a, onlyDelivered, { event_types: 'delivered' });
    const sender = await makeSender(db, a);
    const group = await makeGroup(db, a, 'News');
    const list = await makeContactType(db, a, 'Readers');
    await makeContacts(db, a, list, [{ email: 'One@Example.com' }, { email: 'two@example.com' }, { email: 'gone@example.com' }]);
    sink.rcpt = (address) => (address === 'gone@example.com' ? { code: 550, message: 'No such user' } : 'accept');
    ({ utr } = await createSend(app, db, a, { sender, group, list }, { template_html: '<html><body><p>Hello</p></body></html>', single_send_name: 'Hooked', preheader: 'Hello' }));
    await waitForSend(db, utr);
    // The completed event is recorded just after the status changes (its own transaction).
    await waitFor('the completed event', () => db('events').where({ user_id: a.id, type: 'single_send.completed' }).first());
  });

  it('reaches the receiver: every event of the account once, batched by type, each request signed', async () => {
    const expected = await db('events').where({ user_id: a.id }).orderBy('id').select('id', 'type');
    expect(expected.map((e) => e.type).sort()).toEqual(['bounced', 'delivered', 'delivered', 'single_send.completed', 'single_send.started']);
    await waitFor('every event at the receiver', () => eventIds(all.verified()).length >= expected.length, {
      describe: () => all.hits.map((h) => [h.payload.type, h.verified]),
    });
    expect(all.hits.every((h) => h.verified)).toBe(true);
    expect(eventIds(all.hits).sort((x, y) => x - y)).toEqual(expected.map((e) => Number(e.id)));
    for (const hit of all.hits) {
      expect(hit.payload.data.events.every((e) => e.type === hit.payload.type)).toBe(true);
      expect(hit.payload.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    }
    const delivered = all.hits.find((h) => h.payload.type === 'delivered')!;
    expect(delivered.payload.data.events.map((e) => e.email).sort()).toEqual(['one@example.com', 'two@example.com']);
    expect(delivered.payload.data.events[0]).toEqual({
      id: expect.any(Number),
      type: 'delivered',
      email: expect.any(String),
      single_send_utr: utr,
      automation_utr: null,
      occurred_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/),
      data: {},
    });
    const bounced = all.hits.find((h) => h.payload.type === 'bounced')!;
    expect(bounced.payload.data.events).toEqual([
      expect.objectContaining({ email: 'gone@example.com', single_send_utr: utr, data: expect.objectContaining({ kind: 'hard', smtp_code: 550, source: 'smtp' }) }),
    ]);
    const completed = all.hits.find((h) => h.payload.type === 'single_send.completed')!;
    expect(completed.payload.data.events[0]).toMatchObject({ email: null, single_send_utr: utr, data: expect.objectContaining({ subject: expect.any(String) }) });
  });

  it('sends a filtered endpoint only its types', async () => {
    await waitFor('the delivered events at the filtered receiver', () => eventIds(onlyDelivered.verified()).length >= 2);
    expect(onlyDelivered.hits.map((h) => h.payload.type)).toEqual(['delivered']);
    expect(onlyDelivered.hits[0].payload.data.events).toHaveLength(2);
  });

  it('records each batch as delivered, with its event ids', async () => {
    const [webhook] = (await api(app, a).get('/webhooks/list')).body.message.webhooks.filter((w: { url: string }) => w.url === all.url);
    // Herald records a batch after the receiver has answered, so the receiver can see it first.
    const rows = await waitFor('every batch recorded as delivered', async () => {
      const now = await deliveries(a, webhook.id);
      return now.length === all.hits.length && now.every((d) => d.status === 'delivered') ? now : undefined;
    });
    expect(rows.every((d) => d.status === 'delivered' && d.attempt === 1 && d.error === null && d.http_status === 204)).toBe(true);
    expect(rows.map((d) => d.msg_id).sort()).toEqual(all.hits.map((h) => h.id).sort());
    expect(rows.flatMap((d) => d.event_ids).sort()).toEqual(eventIds(all.hits).sort());
  });
});

describe('batches', () => {
  it('puts at most 500 events of one type in a request, every event once, in id order', async () => {
    const a = await makeAccount(db, 'Busy');
    const r = await receiver();
    await saveWebhook(a, r, { event_types: 'opened,clicked' });
    await db.raw(
      `INSERT INTO events (user_id, type, email, data)
       SELECT ?, CASE WHEN n % 100 = 0 THEN 'clicked' ELSE 'opened' END, 'r' || n || '@example.com',
              CASE WHEN n % 100 = 0 THEN '{"url":"https://example.com","suspected_bot":false}'::jsonb ELSE '{}'::jsonb END
       FROM generate_series(1, 1300) n`,
      [a.id],
    );
    await waitFor('1,300 events at the receiver', () => eventIds(r.verified()).length >= 1300);
    expect(r.hits.every((h) => h.verified && h.payload.data.events.length <= 500)).toBe(true);
    const ids = eventIds(r.hits);
    expect(new Set(ids).size).toBe(1300);
    for (const h of r.hits) {
      const batch = h.payload.data.events.map((e) => e.id as number);
      expect(batch).toEqual([...batch].sort((x, y) => x - y));
    }
    expect(r.hits.filter((h) => h.payload.type === 'opened').map((h) => h.payload.data.events.length).sort()).toEqual([287, 500, 500]);
    expect(r.hits.filter((h) => h.payload.type === 'clicked').map((h) => h.payload.data.events.length)).toEqual([13]);
  });
});

describe('retries', () => {
  it('retries a failing receiver with the same webhook-id until it answers 2xx', async () => {
    const a = await makeAccount(db, 'Flaky');
    const r = await receiver();
    r.respond = () => (r.hits.length < 3 ? 503 : 204);
    const id = await saveWebhook(a, r);
    await notify(a, 'flaky');
    await waitFor('the batch delivered', async () => (await deliveries(a, id))[0]?.status === 'delivered');
    expect(r.hits.map((h) => h.answered)).toEqual([503, 503, 503, 204]);
    expect(new Set(r.hits.map((h) => h.id)).size).toBe(1);
    expect(r.hits.every((h) => h.verified)).toBe(true);
    expect(new Set(r.hits.map((h) => h.body)).size).toBe(1);
    const [row] = await deliveries(a, id);
    expect(row).toMatchObject({ msg_id: r.hits[0].id, status: 'delivered', attempt: 4, http_status: 204, error: null });
    expect(await db('webhooks').where({ id }).first('failing_since')).toEqual({ failing_since: null });
  });

  it('loses nothing while the receiver is down or does not answer, and delivers once it is back', async () => {
    const a = await makeAccount(db, 'Down');
    const first = await receiver();
    const port = first.port;
    const id = await saveWebhook(a, first);
    const secret = first.secret;
    await first.close();
    await notify(a, 'one');
    await notify(a, 'two');
    const row = await waitFor('two failed attempts', async () => {
      const [d] = await deliveries(a, id);
      return d && d.attempt >= 2 ? d : undefined;
    });
    expect(row).toMatchObject({ status: 'pending', http_status: null, error: expect.stringMatching(/^connection failed: .*ECONNREFUSED/) });
    // Back, but silent at first: the attempt times out (WEBHOOK_TIMEOUT_MS) and is retried.
    const back = await startReceiver(secret, port);
    receivers.push(back);
    back.respond = () => (back.hits.length === 0 ? 0 : 200);
    await waitFor('every batch delivered', async () => (await deliveries(a, id)).every((d) => d.status === 'delivered'));
    const rows = await deliveries(a, id);
    // The two events may be one batch or two (each was recorded in its own transaction).
    expect(back.hits.length).toBeGreaterThan(rows.length); // the silent first answer was retried
    expect(new Set(back.hits.map((h) => h.id))).toEqual(new Set(rows.map((d) => d.msg_id)));
    expect(back.hits.map((h) => h.id)).toContain(row.msg_id);
    expect(back.hits.every((h) => h.verified)).toBe(true);
    const events = (await db('events').where({ user_id: a.id }).orderBy('id').pluck('id')).map(Number);
    const delivered = back.hits.filter((h) => h.answered === 200);
    expect(delivered).toHaveLength(rows.length);
    expect(eventIds(delivered).sort((x, y) => x - y)).toEqual(events);
  });

  it('gives a batch up after WEBHOOK_MAX_ATTEMPTS, keeping the last error', async () => {
    const a = await makeAccount(db, 'Broken');
    const r = await receiver();
    r.respond = () => 500;
    const id = await saveWebhook(a, r);
    await notify(a, 'broken');
    await waitFor('the batch given up', async () => (await deliveries(a, id))[0]?.status === 'failed', { timeoutMs: 30_000 });
    expect(r.hits).toHaveLength(6);
    expect(new Set(r.hits.map((h) => h.id)).size).toBe(1);
    const [row] = await deliveries(a, id);
    expect(row).toMatchObject({ status: 'failed', attempt: 6, http_status: 500, error: expect.stringMatching(/^HTTP 500: answer 500 x+$/) });
    expect(row.error!.length).toBeLessThanOrEqual('HTTP 500: '.length + 1024);
  });
});

describe('an endpoint failing for WEBHOOK_DISABLE_AFTER_HOURS', () => {
  it('is disabled, with a webhook.disabled account event other endpoints receive; turned on again it gets its batch', async () => {
    const a = await makeAccount(db, 'Failing');
    const failing = await receiver();
    failing.respond = () => 500;
    const watcher = await receiver();
    const id = await saveWebhook(a, failing);
    await saveWebhook(a, watcher, { event_types: 'webhook.disabled' });
    await notify(a, 'x');
    await waitFor('a first failure', async () => (await db('webhooks').where({ id }).first('failing_since')).failing_since !== null);
    // As if every attempt had failed for three days.
    await db('webhooks').where({ id }).update({ failing_since: db.raw("now() - interval '73 hours'") });
    await waitFor('the endpoint disabled', async () => (await db('webhooks').where({ id }).first('is_active')).is_active === 0);
    const [event] = await db('events').where({ user_id: a.id, type: 'webhook.disabled' }).select('data');
    expect(event.data).toMatchObject({ webhook_id: id, url: failing.url, hours: 72, subject: 'Webhook disabled' });
    await waitFor('the watcher told', () => watcher.verified().length > 0);
    expect(watcher.hits[0].payload.data.events[0]).toMatchObject({ type: 'webhook.disabled', data: { webhook_id: id } });
    // Disabled: no more attempts.
    const attempts = failing.hits.length;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(failing.hits.length).toBe(attempts);
    expect((await api(app, a).get(`/webhooks/details?id=${id}`)).body.message.webhook).toMatchObject({ is_active: 0 });

    // Turned on again, a batch waiting out a long backoff goes at once.
    await db('webhook_deliveries').where({ user_id: a.id, webhook_id: id }).update({ next_attempt_at: db.raw("now() + interval '8 hours'") });
    failing.respond = () => 200;
    expectSuccess(await api(app, a).form('/webhooks/save', { id, url: failing.url, is_active: 1 }), 'Updated Successfully');
    await waitFor('the batch delivered', async () => (await deliveries(a, id))[0].status === 'delivered');
    expect((await api(app, a).get(`/webhooks/details?id=${id}`)).body.message.webhook).toMatchObject({ is_active: 1, failing_since: null });
  });
});

describe('SSRF at delivery', () => {
  it('refuses an address that is no longer allowed when the batch is sent, and sends nothing there', async () => {
    const a = await makeAccount(db, 'Rebound');
    const r = await receiver();
    const id = await saveWebhook(a, r);
    // As if the name now resolved elsewhere: 127.0.0.2 is loopback and not in WEBHOOK_ALLOW_HOSTS.
    await db('webhooks').where({ id }).update({ url: `http://127.0.0.2:${r.port}/hook` });
    await notify(a, 'rebound');
    const [row] = await waitFor('a refused attempt', async () => {
      const rows = await deliveries(a, id);
      return rows[0]?.error ? rows : undefined;
    });
    expect(row).toMatchObject({ status: 'pending', http_status: null, error: 'refused: The url must not point to a loopback, private or link-local address.' });
    expect(r.hits).toHaveLength(0);
  });
  it('refuses a name that a real DNS server answered with a public address at save and with 127.0.0.1 now (rebinding)', async () => {
    const dns = await startDnsServer();
    config.dnsServers = [dns.servers];
    try {
      const a = await makeAccount(db, 'Rebinding');
      const r = await receiver();
      dns.set('hooks.rebind.test', 'A', ['93.184.215.14']);
      const id = await saveWebhook(a, `http://hooks.rebind.test:${r.port}/hook`);
      dns.set('hooks.rebind.test', 'A', ['127.0.0.1']);
      await notify(a, 'rebinding');
      const [row] = await waitFor('a refused attempt', async () => {
        const rows = await deliveries(a, id);
        return rows[0]?.error ? rows : undefined;
      });
      expect(row).toMatchObject({ status: 'pending', http_status: null, error: 'refused: The url must not point to a loopback, private or link-local address.' });
      expect(r.hits).toHaveLength(0);
      expect(dns.queries.some((q) => q.name === 'hooks.rebind.test')).toBe(true);
    } finally {
      config.dnsServers = [];
      await dns.close();
    }
  });
});
