/**
 * bench:send's target baseline, the **minimal signed sender**: what a sender that signs every
 * message needs and nothing more, written without Herald's code, so that where Herald's own SMTP
 * pool or signing steps are slower than the plainest way to do the same work, that shows as part
 * of the gap (issue 33).
 *
 * - `poolSize` nodemailer `SMTPConnection`s, each opened once and kept for the whole run;
 * - each connection has `ahead` messages prepared before it needs them: a message is DKIM-signed
 *   (relaxed/relaxed, RSA-2048, `crypto.sign` with a callback, so the RSA work runs in libuv's
 *   thread pool) just before it goes, while the connection is still busy with the one before;
 * - per message nothing else: no database, no queue, no bookkeeping, no retry.
 *
 * The signature is a real one: the signed headers unfolded and relaxed, the body hashed as it
 * stands (the messages come from Herald's MIME writer, whose bodies are base64 parts between
 * fixed headers, already in relaxed form with one CRLF at the end).
 */
import { createHash, sign, type KeyObject } from 'node:crypto';
import SMTPConnection from 'nodemailer/lib/smtp-connection';

export interface MinimalMessage {
  to: string;
  /** The message's bytes without its DKIM-Signature. */
  raw: string;
}

export interface MinimalRun {
  host: string;
  port: number;
  from: string;
  poolSize: number;
  /** Messages signed ahead per connection. */
  ahead: number;
  count: number;
  message: (i: number) => MinimalMessage;
  key: { domain: string; selector: string; key: KeyObject };
}

const SIGNED = new Set(['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type', 'list-unsubscribe', 'list-unsubscribe-post', 'reply-to']);

/** The DKIM-Signature line (CRLF-terminated) for `raw`, the RSA signature made in the thread pool. */
export function minimalSignature(raw: string, k: MinimalRun['key']): Promise<string> {
  const end = raw.indexOf('\r\n\r\n');
  const bh = createHash('sha256').update(raw.slice(end + 4)).digest('base64');
  const names: string[] = [];
  let text = '';
  for (const line of raw.slice(0, end).split(/\r\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!SIGNED.has(name)) continue;
    names.push(name);
    text += `${name}:${line.slice(colon + 1).replace(/\r\n/g, '').replace(/[ \t]+/g, ' ').trim()}\r\n`;
  }
  const tags = `v=1; a=rsa-sha256; c=relaxed/relaxed; d=${k.domain}; s=${k.selector}; t=${Math.floor(Date.now() / 1000)}; h=${names.join(':')}; bh=${bh}; b=`;
  text += `dkim-signature:${tags}`;
  return new Promise((resolve, reject) =>
    sign('sha256', Buffer.from(text), k.key, (err, b) => (err ? reject(err) : resolve(`DKIM-Signature: ${tags}\r\n ${b.toString('base64')}\r\n`))),
  );
}

function open(r: MinimalRun): Promise<SMTPConnection> {
  const smtp = new SMTPConnection({ host: r.host, port: r.port, secure: false, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  return new Promise((resolve, reject) => {
    smtp.once('error', reject);
    smtp.connect((err) => (err ? reject(err) : resolve(smtp)));
  });
}

function sendOn(smtp: SMTPConnection, from: string, to: string, bytes: string): Promise<void> {
  return new Promise((resolve, reject) => smtp.send({ from, to: [to] }, bytes, (err) => (err ? reject(err) : resolve())));
}

/** Sends `count` messages; resolves with how many the server accepted and refused. */
export async function sendMinimal(r: MinimalRun): Promise<{ sent: number; failed: number; firstError?: string }> {
  let next = 0;
  let sent = 0;
  let failed = 0;
  let firstError: string | undefined;
  const prepare = (i: number) => {
    const m = r.message(i);
    return minimalSignature(m.raw, r.key).then((line) => ({ to: m.to, bytes: line + m.raw }));
  };
  const lane = async () => {
    const smtp = await open(r);
    const ahead: Array<Promise<{ to: string; bytes: string }>> = [];
    const fill = () => {
      while (ahead.length < r.ahead && next < r.count) ahead.push(prepare(next++));
    };
    fill();
    while (ahead.length) {
      const m = await ahead.shift()!;
      fill();
      try {
        await sendOn(smtp, r.from, m.to, m.bytes);
        sent += 1;
      } catch (err) {
        failed += 1;
        firstError ??= String((err as Error).message);
      }
    }
    smtp.quit();
  };
  await Promise.all(Array.from({ length: r.poolSize }, lane));
  return { sent, failed, firstError };
}
