import { dkimSign } from 'mailauth/lib/dkim/sign';
import { dkimVerify } from 'mailauth/lib/dkim/verify';
import { dkimSignatureLine, SIGNED_HEADERS } from '../../src/dkim/sign';
import { messageWriter } from '../../src/mail/mime';
import { testDkimKey } from '../helpers/dkim-key';

/**
 * Herald's signing path (mailauth's steps, a parsed key) against mailauth itself: the same body
 * hash and header list as its dkimSign, and a signature its dkimVerify passes.
 */
const { key, privateKeyPem, resolver } = testDkimKey('acme.test', 'herald2026111');

const write = messageWriter({ from: { name: 'Acme Ünïcode', email: 'news@acme.test' }, replyTo: 'reply@acme.test', headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } });
const messages = [
  write({
    to: { name: 'Ada', email: 'ada@example.com' },
    subject: 'Grüße, Ada — a long subject that the writer folds into more than one encoded word for sure',
    text: 'Hello  Ada\t \n\nline with trailing spaces   \n\n\n',
    html: '<p>Hello Ada</p>'.repeat(500),
    messageId: '<abc@acme.test>',
    headers: { 'List-Unsubscribe': '<https://herald.test/unsubscribe/abc>' },
  }),
  // A hand-written message: whitespace runs, trailing blanks and empty lines at the end of the body.
  'From: news@acme.test\r\nTo:  ada@example.com \r\nSubject: Hi\r\n\tthere\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\nMessage-ID: <x@acme.test>\r\n' +
    'MIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nHello   world \t\r\n\r\n \r\n\r\n',
  // Edge cases of relaxed canonicalization: leading whitespace, a bare LF, no CRLF at the end; a repeated
  // signed header (both are signed, bottom-up); an empty body.
  'From: news@acme.test\r\nTo: ada@example.com\r\nTo:   grace@example.com\r\nSubject:   Hi   there  \r\n\r\n  indented\t\tline\nbare LF line\r\nlast line without CRLF',
  'From: news@acme.test\r\nSubject: empty\r\n\r\n',
  // Bodies already in relaxed form, hashed as they stand (Herald's own always are): one empty line (an
  // empty body), empty lines after the last one, no CRLF at the end, a bare CR inside a line.
  'From: news@acme.test\r\nSubject: one empty line\r\n\r\n\r\n',
  'From: news@acme.test\r\nSubject: empty lines at the end\r\n\r\nfirst line\r\n\r\n\r\n',
  'From: news@acme.test\r\nSubject: no CRLF at the end\r\n\r\nfirst line\r\nlast line',
  'From: news@acme.test\r\nSubject: a bare CR\r\n\r\nbefore\rafter\r\n',
  // Bodies that are not, each for one reason only: a tab, a run of spaces, a space at a line's end, a bare LF.
  'From: news@acme.test\r\nSubject: a tab\r\n\r\nHello\tworld\r\n',
  'From: news@acme.test\r\nSubject: spaces\r\n\r\nHello   world\r\n',
  'From: news@acme.test\r\nSubject: a space at the end of a line\r\n\r\nHello \r\nworld\r\n',
  'From: news@acme.test\r\nSubject: a bare LF\r\n\r\nHello\nworld\r\n',
];

describe('dkimSignatureLine', () => {
  it.each(messages.map((m, i) => [i, m]))('signs message %i so that mailauth verifies it, with its body hash and header list', async (_i, raw) => {
    const line = await dkimSignatureLine(raw as string, key);
    const { results } = await dkimVerify(Buffer.from(line + raw), { resolver } as never);
    expect(results.map((r) => [r.status.result, r.status.comment ?? null])).toEqual([['pass', null]]);
    const theirs = await dkimSign(raw as string, {
      canonicalization: 'relaxed/relaxed',
      algorithm: 'rsa-sha256',
      headerList: SIGNED_HEADERS,
      signatureData: [{ signingDomain: 'acme.test', selector: 'herald2026111', privateKey: privateKeyPem }],
    } as never);
    const tag = (text: string, name: string) => new RegExp(`[;\\s]${name}=([^;]+)`).exec(text)?.[1].replace(/\s+/g, '');
    expect(tag(line, 'bh')).toBe(tag(theirs.signatures, 'bh'));
    expect(tag(line, 'h')).toBe(tag(theirs.signatures, 'h'));
    expect(line).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=acme\.test;/);
  });

  it('fails verification once a signed header or the body changes', async () => {
    const raw = messages[0];
    const signed = (await dkimSignatureLine(raw, key)) + raw;
    for (const tampered of [signed.replace('Subject: ', 'Subject: X'), signed.replace(/\r\n\r\n([A-Za-z])/, '\r\n\r\nX$1')]) {
      const { results } = await dkimVerify(Buffer.from(tampered), { resolver } as never);
      expect(results[0].status.result).not.toBe('pass');
    }
  });

  it('makes, in the thread pool, the bytes mailauth signs inline — also with many signatures in flight at once', async () => {
    const signTime = new Date('2026-11-26T10:00:00Z');
    const theirs = await Promise.all(
      messages.map((raw) =>
        dkimSign(raw, {
          canonicalization: 'relaxed/relaxed',
          algorithm: 'rsa-sha256',
          headerList: SIGNED_HEADERS,
          signTime,
          signatureData: [{ signingDomain: 'acme.test', selector: 'herald2026111', privateKey: privateKeyPem }],
        } as never),
      ),
    );
    // Twenty at once, as the sender's lanes keep them: each line is its own message's.
    const ours = await Promise.all(Array.from({ length: 20 }, (_, i) => dkimSignatureLine(messages[i % messages.length], key, signTime)));
    const unfolded = (line: string) => line.replace(/\r\n[ \t]+/g, ' ').replace(/\s+/g, ' ').trim();
    ours.forEach((line, i) => expect(unfolded(line)).toBe(unfolded(theirs[i % messages.length].signatures)));
  });

  it('rejects a message without a body instead of signing it', async () => {
    await expect(dkimSignatureLine('From: a@acme.test\r\nSubject: x\r\n', key)).rejects.toThrow('the message has no body');
  });
});
