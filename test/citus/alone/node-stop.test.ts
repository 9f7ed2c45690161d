import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../../src/config';
import { createLogger } from '../../../src/logger';
import { startServer, type Running } from '../../../src/server';
import { closePool, testDatabaseUrl, type TestAccount } from '../../helpers/app';
import { createDb } from '../../../src/db/knex';
import { TEST_MASTER_KEY } from '../../helpers/master-key';
import { patient, waitFor } from '../../helpers/wait';
import { accountsOnEachNode, workerPorts } from '../nodes';

/**
 * One worker node of the cluster stopped (`pg_ctl stop`, fast shutdown) under a running
 * `herald serve`, then started again: the accounts whose shards it holds get the spec's
 * envelope with 503 and a message that says so — promptly, not a 500, not a hang (the sessions'
 * statement_timeout, DB_QUERY_TIMEOUT_MS, bounds every statement) — the accounts on the other
 * node keep working, reads and writes, and once the node is back the same process answers them
 * all again. Stopping a node stops it for every database of the cluster, so this file runs alone,
 * after the others, on a database of its own (scripts/citus/test.sh, test/citus/jest.alone.config.js).
 */
const url = testDatabaseUrl();
const db = createDb({ url, poolMax: 2, logger: createLogger('silent') });
const QUERY_TIMEOUT_MS = 5000;
let running: Running;
let base: string;
let down: TestAccount;
let up: TestAccount;
let stoppedPort: number;

const NODE_DOWN = 'Service Unavailable: the database node that holds this account’s data cannot be reached, try again shortly';

/** scripts/citus/node.sh on this cluster (the coordinator's port is the database URL's). */
function node(action: 'stop' | 'start', port: number): void {
  execFileSync('bash', [path.join(__dirname, '../../../scripts/citus/node.sh'), action, String(port)], {
    env: { ...process.env, CITUS_PORT: new URL(url).port },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

interface Answer {
  call: string;
  status: number;
  ms: number;
  json: boolean;
  body: { status?: string; errors?: unknown; message?: unknown };
  retryAfter: string | null;
}

async function call(account: TestAccount, method: 'GET' | 'POST', route: string, form?: Record<string, string>): Promise<Answer> {
  const started = Date.now();
  const res = await fetch(`${base}${route}`, {
    method,
    headers: { ...account.headers },
    body: form ? new URLSearchParams(form) : undefined,
    signal: AbortSignal.timeout(patient(60_000)),
  });
  const text = await res.text();
  let body = {};
  try {
    body = JSON.parse(text);
  } catch {
    body = { unparsed: text.slice(0, 200) };
  }
  return { call: `${method} ${route}`, status: res.status, ms: Date.now() - started, json: (res.headers.get('content-type') ?? '').startsWith('application/json'), body, retryAfter: res.headers.get('retry-after') };
}

/** A read and a write of the account's own rows (contacts and contact types, on its node). */
async function readAndWrite(account: TestAccount, tag: string): Promise<Answer[]> {
  return [
    await call(account, 'GET', '/contacts/list?page=1&per_page=10'),
    await call(account, 'GET', '/contacts-type'),
    await call(account, 'POST', '/contacts-type/add', { name: `Added ${tag}` }),
  ];
}

const statuses = (answers: Answer[]) => answers.map((a) => [a.call, a.status]);

beforeAll(async () => {
  const config = loadConfig({
    DATABASE_URL: url,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    WORKER: '0',
    DB_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    DATA_DIR: path.join(os.tmpdir(), `herald-citus-node-stop-${process.pid}`),
    HERALD_MASTER_KEY: TEST_MASTER_KEY,
  });
  running = await startServer(config, createLogger('silent'));
  base = `http://127.0.0.1:${(running.server.address() as { port: number }).port}`;
  const byNode = await accountsOnEachNode(db, 'Node stop');
  const ports = await workerPorts(db);
  stoppedPort = ports[ports.length - 1];
  down = byNode.get(stoppedPort)!;
  up = byNode.get(ports[0])!;
});

afterAll(async () => {
  await running?.shutdown('test');
  await closePool(db);
});

describe('a worker node stopped and started again', () => {
  it('answers 503 for the accounts it holds, promptly; the other node’s accounts keep working; all recover without a restart', async () => {
    expect(statuses([...(await readAndWrite(down, 'before')), ...(await readAndWrite(up, 'before'))]).every(([, s]) => s === 200)).toBe(true);

    node('stop', stoppedPort);
    let during: { down: Answer[]; up: Answer[]; healthz: number };
    try {
      during = {
        down: [...(await readAndWrite(down, 'during')), ...(await readAndWrite(down, 'during again'))],
        up: await readAndWrite(up, 'during'),
        healthz: (await fetch(`${base}/healthz`)).status,
      };
    } finally {
      node('start', stoppedPort);
    }

    // The stopped node's account: the envelope, 503 with Retry-After and the message that names
    // the cause, every time, each well within the statement timeout.
    for (const a of during.down) {
      expect({ call: a.call, status: a.status, json: a.json, body: a.body, retryAfter: a.retryAfter }).toEqual({
        call: a.call,
        status: 503,
        json: true,
        body: { status: 'failed', errors: NODE_DOWN },
        retryAfter: '5',
      });
      expect(a.ms).toBeLessThan(QUERY_TIMEOUT_MS + patient(5000));
    }
    // The other node's account reads and writes as before; the coordinator is healthy.
    expect(statuses(during.up)).toEqual(statuses(during.up).map(([c]) => [c, 200]));
    expect(during.healthz).toBe(200);

    // Back: the same process answers the stopped node's account again, reads and writes.
    await waitFor('the node’s account to be answered again', async () => (await call(down, 'GET', '/contacts-type')).status === 200, { timeoutMs: 60_000 });
    const after = [...(await readAndWrite(down, 'after')), ...(await readAndWrite(up, 'after'))];
    expect(statuses(after)).toEqual(statuses(after).map(([c]) => [c, 200]));
    // Nothing written during the outage went missing or half-way: the up account's addition is there, the down account's is not.
    const names = async (a: TestAccount) => (await db('contact_types').where({ user_id: a.id }).pluck('name')).filter((n: string) => n.startsWith('Added '));
    expect((await names(up)).sort()).toEqual(['Added after', 'Added before', 'Added during']);
    expect((await names(down)).sort()).toEqual(['Added after', 'Added before']);
  });
});
