import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request as the receiver saw it, with whether its Standard Webhooks signature verified. */
export interface Hit {
  id: string;
  timestamp: string;
  verified: boolean;
  body: string;
  payload: { type: string; timestamp: string; data: { events: Array<Record<string, unknown>> } };
  answered: number;
}

export interface Receiver {
  url: string;
  port: number;
  hits: Hit[];
  /** The secret signatures are checked with (the one a webhook's save answered). */
  secret: string;
  /** The status to answer each request with (default 204; 0: never answer). */
  respond: (hit: Omit<Hit, 'answered'>) => number;
  /** Hits whose signature verified. */
  verified(): Hit[];
  close(): Promise<void>;
}

/**
 * A real HTTP endpoint receiving webhooks, verifying each request with the `standardwebhooks`
 * package (as a consumer would), answering with `respond`'s status.
 */
export async function startReceiver(secret = '', port = 0): Promise<Receiver> {
  const receiver: Partial<Receiver> = { hits: [], secret, respond: () => 204 };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified = false;
      try {
        new Webhook(receiver.secret!).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      let payload: Hit['payload'];
      try {
        payload = JSON.parse(body);
      } catch {
        payload = { type: '', timestamp: '', data: { events: [] } };
      }
      const seen = { id: String(req.headers['webhook-id'] ?? ''), timestamp: String(req.headers['webhook-timestamp'] ?? ''), verified, body, payload };
      const status = receiver.respond!(seen);
      receiver.hits!.push({ ...seen, answered: status });
      if (status === 0) return;
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(status >= 300 ? `answer ${status} ${'x'.repeat(5000)}` : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    verified: () => receiver.hits!.filter((h) => h.verified),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as Receiver;
}
