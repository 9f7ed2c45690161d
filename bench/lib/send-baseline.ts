/**
 * The send benchmark's baseline, in a child process of its own: raw nodemailer, the naive
 * way — a pooled SMTP transport and one `sendMail({ from, to, subject, html })` per message,
 * so nodemailer composes the MIME (headers, quoted-printable/base64 body) every time. The
 * HTML is pre-rendered before the clock starts (Herald's own renderer on the same design, a
 * set of personalised variants reused round-robin), so only sending is timed.
 *
 * Parameters come as a JSON file named by BENCH_BASELINE; the result goes back over IPC as
 * { type: 'result', ...BaselineResult }.
 */
import fs from 'node:fs';
import nodemailer from 'nodemailer';
import { compileDesign } from '../../src/delivery/render';

export interface BaselineParams {
  port: number;
  count: number;
  poolSize: number;
  /** sendMail calls in flight at once (Herald's SEND_CONCURRENCY). */
  concurrency: number;
  html: string;
  subject: string;
  fromName: string;
  fromEmail: string;
  senderAddress: string;
  publicUrl: string;
  /** Recipient i is `${prefix}${i}@${domain}`. */
  prefix: string;
  domain: string;
}

export interface BaselineResult {
  sent: number;
  failed: number;
  firstError?: string;
  ms: number;
  cpuMs: number;
  /** Time spent pre-rendering the variants (not timed). */
  prepareMs: number;
}

const VARIANTS = 1000;

async function run(p: BaselineParams): Promise<BaselineResult> {
  const prepStarted = Date.now();
  const design = compileDesign({
    subject: p.subject,
    preheader: '',
    html: p.html,
    fromName: p.fromName,
    fromEmail: p.fromEmail,
    replyTo: p.fromEmail,
    senderAddress: p.senderAddress,
    publicUrl: p.publicUrl,
    customFields: new Map(),
  });
  const names = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'John'];
  const variants = Array.from({ length: VARIANTS }, (_, i) => {
    const m = design.render(
      { email: `${p.prefix}${i}@${p.domain}`, token: i.toString(16).padStart(32, '0'), data: { first_name: names[i % names.length], last_name: 'Bench' } },
      `<${i}@bench>`,
    );
    return { subject: m.subject, html: m.html };
  });
  const prepareMs = Date.now() - prepStarted;

  const transport = nodemailer.createTransport({
    pool: true,
    maxConnections: p.poolSize,
    maxMessages: Infinity,
    host: '127.0.0.1',
    port: p.port,
    secure: false,
    ignoreTLS: true,
  });
  let sent = 0;
  let failed = 0;
  let firstError: string | undefined;
  let next = 0;
  const cpu0 = process.cpuUsage();
  const started = process.hrtime.bigint();
  const lane = async () => {
    while (next < p.count) {
      const i = next++;
      const v = variants[i % VARIANTS];
      try {
        await transport.sendMail({
          from: { name: p.fromName, address: p.fromEmail },
          to: `${p.prefix}${i}@${p.domain}`,
          subject: v.subject,
          html: v.html,
        });
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
  return { sent, failed, firstError, ms, cpuMs: (cpu.user + cpu.system) / 1000, prepareMs };
}

if (require.main === module) {
  const params = JSON.parse(fs.readFileSync(process.env.BENCH_BASELINE!, 'utf8')) as BaselineParams;
  run(params).then(
    (result) => process.send!({ type: 'result', ...result }, () => process.exit(0)),
    (err) => {
      process.stderr.write(`baseline failed: ${(err as Error).stack}\n`);
      process.exit(1);
    },
  );
}
