import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Dns } from '../dns';
import { RefusedTarget, resolveTarget } from './ssrf';

/** What became of one request: the endpoint's HTTP status (null: no answer) and an error if not 2xx. */
export interface PostOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
}

/** At most this much of an answer is read (and kept as the error of a failed attempt). */
const MAX_BODY_BYTES = 1024;

export interface PostOptions {
  allowHosts: string[];
  timeoutMs: number;
  dns: Dns;
}

/**
 * POSTs a webhook body. The host is resolved and checked now (ssrf.ts) and the connection goes
 * to the checked address (a `lookup` that answers only it), while the Host header and the TLS
 * name stay the URL's. Redirects are not followed (a 3xx is a failure like any non-2xx); the
 * answer is read up to 1 KB; the whole exchange has one deadline.
 */
export async function postWebhook(
  urlText: string,
  body: string,
  headers: Record<string, string>,
  opts: PostOptions,
): Promise<PostOutcome> {
  // The deadline covers the lookup too, so a claim's lease (3 × the timeout) outlasts any attempt.
  const deadline = Date.now() + opts.timeoutMs;
  let target;
  try {
    target = await withDeadline(resolveTarget(urlText, opts.allowHosts, opts.dns), opts.timeoutMs);
  } catch (err) {
    if (err instanceof RefusedTarget) return { ok: false, status: null, error: `refused: ${err.message.replace(':attribute', 'url')}` };
    if (err instanceof DeadlineError) return { ok: false, status: null, error: `timeout: no answer within ${opts.timeoutMs} ms` };
    throw err;
  }
  const { url, address, family } = target;
  const lookup: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all) (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else cb(null, address, family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        lookup,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'Herald-Webhooks/1',
          ...headers,
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const text = Buffer.concat(chunks).subarray(0, MAX_BODY_BYTES).toString('utf8');
          const ok = status >= 200 && status < 300;
          finish({ ok, status, error: ok ? null : `HTTP ${status}${text ? `: ${text}` : ''}` });
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= MAX_BODY_BYTES) done();
        });
        res.on('end', done);
        res.on('error', done);
        res.on('aborted', done);
      },
    );
    const timer = setTimeout(() => {
      finish({ ok: false, status: null, error: `timeout: no answer within ${opts.timeoutMs} ms` });
      req.destroy();
    }, Math.max(0, deadline - Date.now()));
    req.on('error', (err) => finish({ ok: false, status: null, error: `connection failed: ${err.message}` }));
    req.end(body);
  });
}

class DeadlineError extends Error {}

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlineError()), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
