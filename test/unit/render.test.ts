import fc from 'fast-check';
import { simpleParser } from 'mailparser';
import { compileDesign, type DesignSource, type RecipientData } from '../../src/render/render';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { dkimSignatureLine, dkimSignatureLineOf } from '../../src/dkim/sign';
import { testDkimKey } from '../helpers/dkim-key';

/**
 * A compiled design's messages (src/render/render.ts): each part's literal text is encoded once
 * and each recipient's values around it, so what a mail client decodes must be exactly the text
 * the design and the values make (`content`), for any values.
 */
const HTML = `<html><body><h1>Hello ((first_name))</h1><p>${'Grüße aus Zürich — a long paragraph ✓ '.repeat(30)}</p>
<p>Your plan: ((plan)). Write to ((email)). From ((sender_name)), ((sender_address)).</p>
<p><a href="https://example.com/blog">Blog</a> · <a href="https://example.com/pricing">Pricing</a></p></body></html>`;

const design = (over: Partial<DesignSource> = {}) =>
  compileDesign({
    subject: 'News for ((first_name)) ((last_name))',
    preheader: 'Hi ((first_name)), on ((plan))',
    html: HTML,
    fromName: 'Acme & Co <News>',
    fromEmail: 'news@acme.test',
    replyTo: 'reply@acme.test',
    senderAddress: '1 High St, London',
    publicUrl: 'https://h.test',
    customFields: new Map([['7', 'plan']]),
    links: new Map([
      ['https://example.com/blog', 1],
      ['https://example.com/pricing', 2],
    ]),
    ...over,
  });

const recipient = (first: string, plan: unknown, n = 1): RecipientData => ({
  email: `r${n}@example.com`,
  token: n.toString(16).padStart(56, '0'),
  fields: { first_name: first, last_name: 'Lovelace' },
  custom: { '7': plan },
  clickUrl: (id) => `https://h.test/t/click/${'ab'.repeat(30)}${id}`,
});

describe('compileDesign', () => {
  it('renders messages whose decoded parts are the design filled in, whatever the values (lengths, scripts, markup)', async () => {
    const d = design();
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 60 }), fc.string({ unit: 'grapheme', maxLength: 40 }), async (first, plan) => {
        const r = recipient(first, plan);
        const message = d.render(r, '<m1@acme.test>');
        const content = d.content(r);
        expect(message.raw).toBe(`${message.head}\r\n${message.body}`);
        const parsed = await simpleParser(message.raw);
        expect(parsed.html).toBe(content.html);
        expect((parsed.text ?? '').trimEnd()).toBe(content.text.trimEnd());
        expect(parsed.subject).toBe(content.subject);
      }),
      { numRuns: 60 },
    );
  });

  it('fills placeholders as before: values escaped in the HTML, the sender’s name and address too, custom fields by name, click links tracked', () => {
    const content = design().content(recipient('<Ada>', 'pro'));
    expect(content.subject).toBe('News for <Ada> Lovelace');
    expect(content.html).toContain('<h1>Hello &#60;Ada&#62;</h1>');
    expect(content.html).toContain('Your plan: pro. Write to r1@example.com. From Acme &#38; Co &#60;News&#62;, 1 High St, London.');
    expect(content.html).toContain('Hi &#60;Ada&#62;, on pro');
    expect(content.html).toContain(`href="https://h.test/t/click/${'ab'.repeat(30)}1"`);
    expect(content.html).toContain(`src="https://h.test/t/open/${'0'.repeat(55)}1.gif"`);
    expect(content.html).toContain(`href="https://h.test/unsubscribe/${'0'.repeat(55)}1"`);
    expect(content.text.replace(/\s+/g, ' ')).toContain('Your plan: pro. Write to r1@example.com. From Acme & Co <News>, 1 High St, London.');
    // A missing custom value, and a name nothing stands for, render empty.
    expect(design({ html: '<p>[((plan))][((nothing_here))]</p>' }).content(recipient('Ada', null)).html).toContain('<p>[][]</p>');
  });

  it('leaves a preheader that names itself without it, instead of never ending', () => {
    const content = design({ preheader: '((__preheader))Hi ((first_name))' }).content(recipient('Ada', 'pro'));
    expect(content.html).toContain('>Hi Ada&#8199;');
  });

  it('is signed in its two pieces as the whole message would be, and the signature verifies (mailauth)', async () => {
    const { key, resolver } = testDkimKey('acme.test', 'sel1');
    const at = new Date('2026-11-27T10:00:00Z');
    for (const [i, first] of ['Ada', 'Zoë', '', 'José María'].entries()) {
      const message = design().render(recipient(first, 'starter', i + 1), `<m${i}@acme.test>`);
      const line = await dkimSignatureLineOf(message, key, at);
      expect(line).toBe(await dkimSignatureLine(message.raw, key, at));
      const verified = await dkimVerify(Buffer.from(line + message.raw), { resolver });
      expect(verified.results.map((r: { status: { result: string } }) => r.status.result)).toEqual(['pass']);
    }
  });
});
