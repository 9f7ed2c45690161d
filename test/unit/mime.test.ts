import fc from 'fast-check';
import { simpleParser } from 'mailparser';
import { AsciiBuilder, base64Template, buildMessage, encodeWord, formatAddress, headerSafe, type MessageParts } from '../../src/mail/mime';

/**
 * The MIME writer every campaign message goes through (src/mail/mime.ts): what it writes
 * is read back with mailparser, as a mail client would.
 */
const parts = (over: Partial<MessageParts> = {}): MessageParts => ({
  from: { name: 'Acme News', email: 'news@acme.test' },
  to: { email: 'ada@example.com' },
  replyTo: 'reply@acme.test',
  subject: 'Hello',
  text: 'Hello Ada',
  html: '<p>Hello Ada</p>',
  messageId: '<abc@acme.test>',
  headers: { 'List-Unsubscribe': '<https://h.test/unsubscribe/abc>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  date: new Date('2026-11-22T07:27:00Z'),
  ...over,
});

/** The header block, unfolded, as [name, value] pairs. */
function headerLines(raw: string): Array<[string, string]> {
  const block = raw.slice(0, raw.indexOf('\r\n\r\n')).replace(/\r\n[ \t]/g, ' ');
  return block.split('\r\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]);
}

describe('buildMessage', () => {
  it('writes multipart/alternative: the text part, then the HTML part, both base64 UTF-8, with the given headers', async () => {
    const raw = buildMessage(parts({ text: 'Grüße, Søren ✓', html: '<p>Grüße, <b>Søren</b> ✓</p>', boundary: 'herald-test' }));
    expect(headerLines(raw)).toEqual([
      ['From', 'Acme News <news@acme.test>'],
      ['To', 'ada@example.com'],
      ['Reply-To', 'reply@acme.test'],
      ['Subject', 'Hello'],
      ['Date', 'Sun, 22 Nov 2026 07:27:00 +0000'],
      ['Message-ID', '<abc@acme.test>'],
      ['MIME-Version', '1.0'],
      ['List-Unsubscribe', '<https://h.test/unsubscribe/abc>'],
      ['List-Unsubscribe-Post', 'List-Unsubscribe=One-Click'],
      ['Content-Type', 'multipart/alternative; boundary="herald-test"'],
    ]);
    const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
    expect(body.split('\r\n').filter((l) => l.startsWith('--herald-test'))).toEqual(['--herald-test', '--herald-test', '--herald-test--']);
    expect(body.indexOf('Content-Type: text/plain; charset=utf-8')).toBeLessThan(body.indexOf('Content-Type: text/html; charset=utf-8'));
    expect(body.match(/Content-Transfer-Encoding: base64/g)).toHaveLength(2);
    const mail = await simpleParser(raw);
    expect(mail.text).toBe('Grüße, Søren ✓');
    expect(mail.html).toBe('<p>Grüße, <b>Søren</b> ✓</p>');
    expect(mail.messageId).toBe('<abc@acme.test>');
  });

  it('ends every line with CRLF, and no line is longer than 998 characters', () => {
    const raw = buildMessage(parts({ html: `<p>${'x'.repeat(5000)}</p>\n<p>line two</p>`, text: 'a\nb\r\nc' }));
    expect(raw.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(Math.max(...raw.split('\r\n').map((l) => l.length))).toBeLessThanOrEqual(998);
    expect(raw.endsWith('\r\n')).toBe(true);
  });

  it('draws a fresh boundary when none is given', () => {
    const boundaryOf = (raw: string) => /boundary="([^"]+)"/.exec(raw)![1];
    const a = boundaryOf(buildMessage(parts()));
    const b = boundaryOf(buildMessage(parts()));
    expect(a).toMatch(/^herald-[0-9a-f]{24}$/);
    expect(a).not.toBe(b);
  });

  it('keeps a value with line breaks on its header line: no header or recipient can be smuggled in', async () => {
    const raw = buildMessage(
      parts({
        subject: 'News\r\nBcc: victim@evil.test',
        from: { name: 'Acme\nX-Injected: yes', email: 'news@acme.test\r\nCc: cc@evil.test' },
        replyTo: 'reply@acme.test\rX-Injected: cr',
        headers: { 'List-Unsubscribe': '<https://h.test/u>\u2028X-Injected: ls' },
      }),
    );
    const names = headerLines(raw).map(([n]) => n.toLowerCase());
    expect(names).not.toContain('bcc');
    expect(names).not.toContain('cc');
    expect(names).not.toContain('x-injected');
    const mail = await simpleParser(raw);
    expect(mail.subject).toBe('News Bcc: victim@evil.test');
    expect(mail.bcc).toBeUndefined();
    expect(mail.cc).toBeUndefined();
  });

  it('round-trips any subject, text and HTML through a mail parser (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 120 }), fc.string({ unit: 'grapheme', maxLength: 400 }), async (subject, content) => {
        const text = `t:${content}`;
        const html = `<p>${content}</p>`;
        const mail = await simpleParser(buildMessage(parts({ subject, text, html })));
        // Header values lose their line breaks (folding may turn runs of blanks into one); bodies are exact.
        const blanks = (v: string) => v.replace(/[ \t]+/g, ' ').trim();
        expect(blanks(mail.subject ?? '')).toBe(blanks(headerSafe(subject)));
        expect(mail.text).toBe(text);
        expect(mail.html).toBe(html);
      }),
      { numRuns: 300 },
    );
  });
});

describe('header values', () => {
  it('headerSafe replaces CR, LF, the Unicode line separators and NUL with a space and trims', () => {
    expect(headerSafe(' a\r\nb\rc\nd\u2028e\u2029f\0g ')).toBe('a b c d e f g');
    expect(headerSafe('\r\n\r\nBcc: x@evil.test')).toBe('Bcc: x@evil.test');
  });

  it('encodeWord leaves printable ASCII alone and writes anything else as UTF-8 encoded-words of at most 75 characters', async () => {
    expect(encodeWord('The November issue, Ada')).toBe('The November issue, Ada');
    const value = 'Søren, here is the news from Zürich — 🎉🎉🎉 and more news for you, Anaïs';
    const encoded = encodeWord(value);
    const words = encoded.split('\r\n ');
    expect(words.length).toBeGreaterThan(1);
    for (const w of words) {
      expect(w).toMatch(/^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
      expect(w.length).toBeLessThanOrEqual(75);
      // No character is split between two words: each word decodes to valid UTF-8 alone.
      const bytes = Buffer.from(w.slice(10, -2), 'base64');
      expect(Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes)).toBe(true);
    }
    expect((await simpleParser(`Subject: ${encoded}\r\n\r\n`)).subject).toBe(value);
  });

  it('formatAddress quotes names with specials, encodes non-ASCII names and strips line breaks', async () => {
    expect(formatAddress({ email: 'a@x.test' })).toBe('a@x.test');
    expect(formatAddress({ name: 'Acme News', email: 'a@x.test' })).toBe('Acme News <a@x.test>');
    expect(formatAddress({ name: 'Doe, John "JD"', email: 'a@x.test' })).toBe('"Doe, John \\"JD\\"" <a@x.test>');
    expect(formatAddress({ name: 'Acme\r\nBcc: x@evil.test', email: 'a@x.test\r\n' })).toBe('"Acme Bcc: x@evil.test" <a@x.test>');
    const encoded = formatAddress({ name: 'Zoë Müller', email: 'zoe@x.test' });
    expect(encoded).toMatch(/^=\?UTF-8\?B\?.+\?= <zoe@x\.test>$/);
    const mail = await simpleParser(`From: ${encoded}\r\n\r\n`);
    expect(mail.from!.value[0]).toEqual({ name: 'Zoë Müller', address: 'zoe@x.test' });
  });
});

/** Base64 lines as a line-by-line decoder reads them: each line decoded on its own, the bytes joined. */
const decodeLines = (out: string) => Buffer.concat(out.split('\r\n').map((l) => Buffer.from(l, 'base64'))).toString('utf8');

describe('AsciiBuilder.base64Lines', () => {
  const lines = (s: string) => new AsciiBuilder().base64Lines(Buffer.from(s, 'utf8').toString('base64')).string();

  it('writes 76-character lines joined by CRLF that decode to the UTF-8 of the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 2000 }), (s) => {
        const out = lines(s);
        const all = out === '' ? [] : out.split('\r\n');
        for (const l of all.slice(0, -1)) expect(l).toHaveLength(76);
        expect((all.at(-1) ?? '').length).toBeLessThanOrEqual(76);
        expect(Buffer.from(all.join(''), 'base64').toString('utf8')).toBe(s);
      }),
    );
    expect(lines('')).toBe('');
    // Larger than the builder's first buffer: it grows, and a short part after it is still exact.
    const big = 'Zürich ✓ '.repeat(20_000);
    expect(Buffer.from(lines(big).replace(/\r\n/g, ''), 'base64').toString('utf8')).toBe(big);
    expect(lines('ü')).toBe(Buffer.from('ü').toString('base64'));
  });
});

describe('base64Template', () => {
  const piece = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.constant(null));

  it('writes what base64 of the filled-in text decodes to, in lines of at most 76 characters of whole groups, for any values', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.string({ unit: 'grapheme', maxLength: 120 }), { maxLength: 12 }), (pieces, values) => {
        const write = base64Template(pieces);
        const out = new AsciiBuilder();
        write(values, out);
        const text = out.string();
        let next = 0;
        const expected = pieces.map((p) => (p === null ? (values[next++] ?? '') : p)).join('');
        expect(Buffer.from(text.replace(/\r\n/g, ''), 'base64').toString('utf8')).toBe(expected);
        // A decoder that reads line by line reads the same: every line is whole groups of four.
        expect(decodeLines(text)).toBe(expected);
        for (const line of text === '' ? [] : text.split('\r\n')) {
          expect(line.length).toBeGreaterThan(0);
          expect(line.length).toBeLessThanOrEqual(76);
          expect(line.length % 4).toBe(0);
          expect(line).toMatch(/^[A-Za-z0-9+/]+=*$/);
        }
      }),
    );
  });

  it('is the same for every recipient and every order of recipients (its buffers are reused)', () => {
    const html = `<p>${'Grüße aus Zürich ✓ '.repeat(40)}</p>`;
    const write = base64Template([html, null, html.slice(7), null, '!']);
    const once = (values: string[]) => {
      const out = new AsciiBuilder();
      write(values, out);
      return decodeLines(out.string());
    };
    const a = once(['Ada', 'https://h.test/x']);
    once(['Søren Kierkegaard '.repeat(300), '']);
    expect(once(['Ada', 'https://h.test/x'])).toBe(a);
    expect(a).toBe(`${html}Ada${html.slice(7)}https://h.test/x!`);
  });
});
