/**
 * The send benchmark's baselines, in a child process of their own: a pooled nodemailer SMTP
 * transport (the pool size and messages in flight Herald uses) sending `count` messages to
 * the sink, with nothing else to do — no database, no queue, no statistics. The messages are
 * what Herald sends (the same design rendered by Herald's renderer: HTML and text part, the
 * same headers), personalised, a set of variants reused round-robin, prepared before the
 * clock starts. Two modes:
 *
 *   composed  nodemailer builds each message from its parts: `sendMail({ from, to, replyTo,
 *             subject, html, text, messageId, headers })` — the usual way to send with it;
 *   raw       the messages pre-rendered to MIME by Herald's writer go as `raw` — the pool's
 *             own limit on this machine, what no sender built on it can beat;
 *   dkim      as composed, with the transport's `dkim` option (relaxed/relaxed, RSA-2048): what
 *             signing every message costs the usual way (`bench:send --dkim`);
 *   signed    as raw, each message DKIM-signed right before it goes, with Herald's own signing
 *             steps and a key parsed once (src/dkim/sign.ts), the RSA signature made in libuv's
 *             thread pool as Herald makes it (up to `concurrency` in flight) — the pool's limit
 *             for a sender that must sign every message (`bench:send`'s target);
 *   pooled    as signed, the messages handed to Herald's own pool of nodemailer connections
 *             (src/mail/smtp-pool.ts) instead of the pooled transport's `sendMail`: the limit of
 *             the path Herald's sender takes (for reference; no target);
 *   minimal   the minimal signed sender (bench/lib/minimal-sender.ts): `poolSize` bare
 *             `SMTPConnection`s, `concurrency / poolSize` messages signed ahead per connection,
 *             its own few lines of DKIM signing, nothing of Herald's sending path — the
 *             target's baseline since issue 33.
 *
 * Parameters come as a JSON file named by BENCH_BASELINE; the result goes back over IPC as
 * { type: 'result', ...BaselineResult }.
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import { createPrivateKey } from 'node:crypto';
import nodemailer from 'nodemailer';
import { dkimSignatureLine } from '../../src/dkim/sign';
import { compileDesign } from '../../src/render/render';
import { SmtpPool } from '../../src/mail/smtp-pool';
import { sendMinimal } from './minimal-sender';

export type BaselineMode = 'composed' | 'raw' | 'dkim' | 'signed' | 'pooled' | 'minimal';

export interface BaselineParams {
  mode: BaselineMode;
  port: number;
  count: number;
  poolSize: number;
  /** sendMail calls in flight at once (Herald's SEND_CONCURRENCY). */
  concurrency: number;
  html: string;
  subject: string;
  preheader: string;
  fromName: string;
  fromEmail: string;
  replyTo: string;
  senderAddress: string;
  publicUrl: string;
  /** Recipient i is `${prefix}${i}@${domain}`. */
  prefix: string;
  domain: string;
  /** Modes dkim and signed: the key the baseline signs with (d= is fromEmail's domain). */
  dkim?: { keySelector: string; privateKey: string };
}

export interface BaselineResult {
  mode: BaselineMode;
  sent: number;
  failed: number;
  firstError?: string;
  ms: number;
  cpuMs: number;
  /** Time spent preparing the variants (not timed). */
  prepareMs: number;
}

const VARIANTS = 1000;
const NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'John', 'Søren', 'Zoë'];

function variants(p: BaselineParams) {
  const design = compileDesign({
    subject: p.subject,
    preheader: p.preheader,
    html: p.html,
    fromName: p.fromName,
    fromEmail: p.fromEmail,
    replyTo: p.replyTo,
    senderAddress: p.senderAddress,
    publicUrl: p.publicUrl,
    customFields: new Map(),
  });
  return Array.from({ length: VARIANTS }, (_, i) => {
    const token = i.toString(16).padStart(56, '0');
    const to = `${p.prefix}${i}@${p.domain}`;
    const recipient = { email: to, token, fields: { first_name: NAMES[i % NAMES.length], last_name: 'Bench', city: 'Springfield' } };
    const m = design.render(recipient, `<${token}@bench-news.test>`);
    return { to, token, ...m, ...design.content(recipient) };
  });
}

async function run(p: BaselineParams): Promise<BaselineResult> {
  const prepStarted = Date.now();
  const prepared = variants(p);
  const prepareMs = Date.now() - prepStarted;
  if (p.mode === 'minimal') return runMinimal(p, prepared, prepareMs);
  const transport = nodemailer.createTransport({
    pool: true,
    maxConnections: p.poolSize,
    maxMessages: Infinity,
    host: '127.0.0.1',
    port: p.port,
    secure: false,
    ignoreTLS: true,
    ...(p.mode === 'dkim' && p.dkim ? { dkim: { domainName: p.fromEmail.split('@')[1], keySelector: p.dkim.keySelector, privateKey: p.dkim.privateKey } } : {}),
  });
  const pool =
    p.mode === 'pooled' ? new SmtpPool({ host: '127.0.0.1', port: p.port, secure: false, size: p.poolSize, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }) : undefined;
  const signer = (p.mode === 'signed' || p.mode === 'pooled') && p.dkim ? { domain: p.fromEmail.split('@')[1], selector: p.dkim.keySelector, key: createPrivateKey(p.dkim.privateKey) } : undefined;
  const send = (i: number) => {
    const v = prepared[i % VARIANTS];
    const to = `${p.prefix}${i}@${p.domain}`;
    if (signer)
      return dkimSignatureLine(v.raw, signer).then((line): Promise<unknown> =>
        pool ? pool.send(p.fromEmail, to, line + v.raw) : transport.sendMail({ envelope: { from: p.fromEmail, to: [to] }, raw: line + v.raw, messageId: v.messageId }),
      );
    // Finished bytes through nodemailer's pooled transport (what Herald's mailer did until 2026-11-27).
    if (p.mode === 'raw') return transport.sendMail({ envelope: { from: p.fromEmail, to: [to] }, raw: v.raw, messageId: v.messageId });
    return transport.sendMail({
      from: { name: p.fromName, address: p.fromEmail },
      to,
      replyTo: p.replyTo,
      subject: v.subject,
      html: v.html,
      text: v.text,
      messageId: v.messageId,
      date: new Date(),
      headers: { 'List-Unsubscribe': `<${p.publicUrl}/unsubscribe/${v.token}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    });
  };
  let sent = 0;
  let failed = 0;
  let firstError: string | undefined;
  let next = 0;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  const lane = async () => {
    while (next < p.count) {
      const i = next++;
      try {
        await send(i);
        sent += 1;
      } catch (err) {
        failed += 1;
        firstError ??= String((err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: p.concurrency }, lane));
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  transport.close();
  pool?.close();
  return { mode: p.mode, sent, failed, firstError, ms, cpuMs: (cpu.user + cpu.system) / 1000, prepareMs };
}

/** The minimal signed sender over the same messages (bench/lib/minimal-sender.ts). */
async function runMinimal(p: BaselineParams, prepared: ReturnType<typeof variants>, prepareMs: number): Promise<BaselineResult> {
  if (!p.dkim) throw new Error('the minimal signed sender needs a key');
  const key = { domain: p.fromEmail.split('@')[1], selector: p.dkim.keySelector, key: createPrivateKey(p.dkim.privateKey) };
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  const result = await sendMinimal({
    host: '127.0.0.1',
    port: p.port,
    from: p.fromEmail,
    poolSize: p.poolSize,
    ahead: Math.max(1, Math.round(p.concurrency / p.poolSize)),
    count: p.count,
    message: (i) => ({ to: `${p.prefix}${i}@${p.domain}`, raw: prepared[i % VARIANTS].raw }),
    key,
  });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  return { mode: p.mode, ...result, ms, cpuMs: (cpu.user + cpu.system) / 1000, prepareMs };
}

if (require.main === module) {
  // The V8 setting Herald's process runs with (bin/herald.js), so both sides collect garbage alike.
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
  const params = JSON.parse(fs.readFileSync(process.env.BENCH_BASELINE!, 'utf8')) as BaselineParams;
  run(params).then(
    (result) => process.send!({ type: 'result', ...result }, () => process.exit(0)),
    (err) => {
      process.stderr.write(`baseline failed: ${(err as Error).stack}\n`);
      process.exit(1);
    },
  );
}
