import fs from 'node:fs';
import path from 'node:path';
import type { ParsedMail } from 'mailparser';
import { api, setupApp } from '../helpers/app';
import { expectSuccess } from '../helpers/expect';
import { makeContacts, makeContactType } from '../helpers/fixtures';
import { createSend } from '../helpers/sends';
import { setupDelivery, waitForSend } from '../helpers/worker';

/**
 * A single send whose template_id is one of the account's saved designs (issue 34), through the
 * worker into a real SMTP server: the message is the design's HTML as rendered at save.
 */
const { app, db, config } = setupApp({ RETRY_BASE_MS: '0', WORKER_POLL_MS: '50' }, 'designs_delivery');
const rig = setupDelivery({ config, db });

const NEWSLETTER = fs.readFileSync(path.join(__dirname, '../../assets/templates/newsletter.json'), 'utf8');

describe('a send of a saved block design', () => {
  let mail: ParsedMail;
  let designId: number;
  let htmlCode: string;

  beforeAll(async () => {
    const { sink, account: a, sender, group } = rig;
    const list = await makeContactType(db, a);
    await makeContacts(db, a, list, [{ email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' }]);
    const saved = await api(app, a).form('/designs/save', { template_name: 'Monthly', format: 'blocks', source: NEWSLETTER });
    expectSuccess(saved);
    designId = saved.body.message.id as number;
    htmlCode = (await api(app, a).get(`/designs/details?id=${designId}`)).body.message.design.html_code as string;
    const { utr } = await createSend(app, db, a, { sender, group, list }, { template_id: designId, template_html: undefined, subject: 'News for ((first_name))' });
    await waitForSend(db, utr);
    [mail] = (await sink.byRecipient()).get('ada@example.com')!;
  });

  it('delivers the design’s HTML, personalised, with its viewport and unsubscribe link', () => {
    expect(mail.subject).toBe('News for Ada');
    const html = mail.html as string;
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(html).toContain('Hi Ada, here is a short round-up of what we shipped');
    expect(html).toContain('A faster, cleaner dashboard');
    expect(html).not.toContain('((');
    expect(html).toMatch(/href="http:\/\/herald\.test\/unsubscribe\/[a-f0-9]{56}"/);
    expect(mail.text).toContain('Hi Ada, here is a short round-up');
    // What was sent is the saved HTML with its placeholders filled: its head as kept, the title filled.
    expect(htmlCode).toContain('<title>This month at ((sender_name))</title>');
    const [before, after] = htmlCode.split('<title>This month at ((sender_name))</title>');
    expect(html.startsWith(`${before}<title>This month at Acme News</title>${after.slice(0, after.indexOf('<body'))}`)).toBe(true);
  });

  it('leaves the design deletable once the send completed', async () => {
    expectSuccess(await api(app, rig.account).delete(`/designs/delete?id=${designId}`), 'Deleted Successfully');
  });
});
