import { createApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { api, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContactType, makeGroup, makeSender } from '../helpers/fixtures';
import { useRouting } from '../helpers/relays';
import { waitFor } from '../helpers/wait';
import { waitForSend } from '../helpers/worker';
import { bulkContacts, createSend, few, minus, NONE } from '../faults/lib/campaign';

/**
 * Streams (issue 36): Herald's own mail (a sender's verification link, here) goes through the
 * route that carries the `system` stream, a send's messages through the `marketing` one — each
 * never through the other. The API is built as `herald serve` builds it, with the same routed
 * mailer as the worker.
 */
const rig = useRouting({
  isolated: 'routes_system',
  db: () => db,
  relays: ['bulk', 'own'],
  routes: (r) => [
    { name: 'bulk', url: r.bulk.url, streams: ['marketing'] },
    { name: 'own', url: r.own.url, streams: ['system'] },
  ],
  env: { MAIL_FROM: 'herald@herald.test' },
});
const { db } = setupApp({}, 'routes_system');

let a: TestAccount;
let group: number;

beforeAll(async () => {
  a = await makeAccount(db, 'System');
  group = await makeGroup(db, a, 'News');
});

describe('system and marketing streams on routes of their own', () => {
  it('a sender’s verification mail goes through the system route; a send’s messages through the marketing route', async () => {
    const { bulk, own } = rig.relays;
    const app = createApp({ config: rig.config, db, logger: createLogger('silent'), mailer: rig.worker!.mailer });
    const unverified = await makeSender(db, a, false);
    const res = await api(app, a).get(`/sender/resend-mail?sender_id=${unverified}`);
    expectSuccess(res);
    await waitFor('the verification mail at the system relay', () => own.recipients().includes('news@acme.test'), { timeoutMs: 30_000 });
    expect(bulk.recipients()).not.toContain('news@acme.test');

    const sender = await makeSender(db, a);
    const list = await makeContactType(db, a, 'Marketing');
    const audience = await bulkContacts(db, a, list, 30, 'm', 'marketing.test');
    const send = await createSend(app, db, a, { sender, group, list, name: 'Marketing' });
    await waitForSend(db, send.utr, 3, 60_000);
    expect(few(minus(audience, new Set(bulk.recipients())))).toEqual(NONE);
    expect(own.recipients().filter((t) => t.endsWith('@marketing.test'))).toEqual([]);
    expect(own.recipients()).toEqual(['news@acme.test']);
    const routes = await db('events').where({ user_id: a.id, single_send_id: send.id, type: 'delivered' }).distinct(db.raw(`data->>'route' AS route`));
    expect(routes).toEqual([{ route: 'bulk' }]);
  });
});
