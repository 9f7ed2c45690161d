import path from 'node:path';
import type { Client } from 'pg';
import { freePort } from '../../test/helpers/net';
import { client, ROOT, SERVE_NODE_ARGS, type Account } from './herald';
import { spawnNode, type Child } from './send-procs';

/**
 * Herald as `npm start` runs it — `node bin/herald.js serve`, API and delivery worker in one
 * process, every setting at its default — except where it connects: the benchmark's
 * database (as the ordinary role that owns it), the SMTP sink, a port of its own.
 */
export interface Serve extends Child {
  baseUrl: string;
}

export async function startServe(opts: {
  databaseUrl: string;
  smtpPort: number;
  dataDir: string;
  publicUrl: string;
  cpu?: string;
  nodeArgs?: string[];
  /** Settings a benchmark changes on purpose (each one named in its README section). */
  env?: Record<string, string>;
  /** Another build's bin/herald.js (bench/routes.ts --compare: a commit built in a worktree of its own). */
  bin?: string;
  /** A command node runs under (bench/routes.ts --instructions: valgrind). */
  wrap?: string[];
  /** How long /healthz may take to answer (default 120 s; under valgrind start-up takes minutes). */
  readyWithinMs?: number;
}): Promise<Serve> {
  const port = await freePort();
  // HERALD_BIN: another build of Herald to run (diagnostics, e.g. an instrumented copy).
  const child = spawnNode('herald serve', opts.bin ?? process.env.HERALD_BIN ?? path.join(ROOT, 'bin', 'herald.js'), ['serve'], {
    cpu: opts.cpu,
    wrap: opts.wrap,
    nodeArgs: [...SERVE_NODE_ARGS, ...(opts.nodeArgs ?? [])],
    env: {
      DATABASE_URL: opts.databaseUrl,
      SMTP_URL: `smtp://127.0.0.1:${opts.smtpPort}`,
      PUBLIC_URL: opts.publicUrl,
      DATA_DIR: opts.dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ...opts.env,
    },
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  const readyMs = opts.readyWithinMs ?? 120_000;
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.child.exitCode !== null) throw new Error(`herald serve exited with ${child.child.exitCode}:\n${child.output()}`);
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await child.stop(1000);
      throw new Error(`herald serve did not become healthy within ${readyMs / 1000} s:\n${child.output()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return Object.assign(child, { baseUrl });
}

/**
 * `GET /sender/dns` for the fixture's sender, as a user reads the records to publish before a first
 * send: the sender was written by SQL (send-fixture.ts), not made through the API, which makes its
 * domain's DKIM key when the sender is added; this call makes it, so no send pays for the key's
 * generation.
 */
export async function readSenderDns(baseUrl: string, account: Account, senderId: number): Promise<void> {
  await client(baseUrl, account).get(`/sender/dns?sender_id=${senderId}`);
}

export const SUBJECT = 'The November issue, ((first_name))';
export const PREHEADER = 'Hi ((first_name)), here is what happened this month';

/** `POST /single/send/create` with schedule_type 0 (send now); returns the utr and when the call was made. */
export async function createSend(
  baseUrl: string,
  account: Account,
  refs: { senderId: number; groupId: number; typeId: number; name: string; templateHtml?: string; fields?: Record<string, string | number> },
): Promise<{ utr: string; calledAt: number }> {
  const api = client(baseUrl, account);
  const calledAt = Date.now();
  const res = (await api.form('/single/send/create', {
    template_id: 2,
    sender_id: refs.senderId,
    unsubscribe_group_id: refs.groupId,
    single_send_name: refs.name,
    subject: SUBJECT,
    preheader: PREHEADER,
    recipient_id: [`contacts_${refs.typeId}`],
    schedule_type: 0,
    ...(refs.templateHtml === undefined ? {} : { template_html: refs.templateHtml }),
    ...refs.fields,
  })) as { message: { utr: string } };
  return { utr: res.message.utr, calledAt };
}

export interface SendRow {
  id: number;
  status: number;
  triggered: number;
  delivered: number;
  bounces: number;
  sent_at: Date | null;
  fanout_done_at: Date | null;
  completed_at: Date | null;
}

export async function sendRow(c: Client, utr: string): Promise<SendRow> {
  const { rows } = await c.query<SendRow>(
    `SELECT id, status, triggered, delivered, bounces, sent_at, fanout_done_at, completed_at FROM single_sends WHERE utr = $1`,
    [utr],
  );
  return rows[0];
}

/** Polls the send's row until it is completed (status 3); fails when Herald exits or after `timeoutMs`. */
export async function waitCompleted(c: Client, utr: string, herald: Child, timeoutMs = 600_000): Promise<SendRow> {
  const deadline = Date.now() + timeoutMs;
  let row = await sendRow(c, utr);
  while (row.status !== 3) {
    if (herald.child.exitCode !== null) throw new Error(`herald exited with ${herald.child.exitCode}:\n${herald.output()}`);
    if (Date.now() > deadline) throw new Error(`send not completed within ${timeoutMs / 1000} s: ${JSON.stringify(row)}`);
    await new Promise((r) => setTimeout(r, 50));
    row = await sendRow(c, utr);
  }
  return row;
}

/** The design links of the pipeline benchmarks: the Newsletter's three and two more. */
export const LINKS = ['https://example.com/blog', 'https://example.com/blog/dashboard', 'https://example.com/blog/planning', 'https://example.com/pricing', 'https://example.com/changelog'];

/** The Newsletter design (3 links) with two more before </body>: 5 http(s) links, as the sends. */
export function designWithLinks(html: string): string {
  const extra = `<p style="text-align:center"><a href="${LINKS[3]}">Pricing</a> · <a href="${LINKS[4]}">What changed</a></p>`;
  const close = html.toLowerCase().lastIndexOf('</body>');
  const out = close < 0 ? html + extra : html.slice(0, close) + extra + html.slice(close);
  const links = new Set([...out.matchAll(/href="(https?:[^"]+)"/g)].map((m) => m[1]));
  if (links.size !== LINKS.length || !LINKS.every((l) => links.has(l))) throw new Error(`the design has links ${[...links].join(', ')}`);
  return out;
}
