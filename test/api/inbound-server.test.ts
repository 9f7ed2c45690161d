import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { startInboundSmtp } from '../../src/bounces/inbound-smtp';
import { loadConfig } from '../../src/config';
import { createDb } from '../../src/db/knex';
import { createLogger } from '../../src/logger';
import { startInbound, startServer } from '../../src/server';
import { testDatabaseUrl } from '../helpers/app';
import { freePort, freePorts } from '../helpers/net';
import { dsn, remoteMta, vacation } from '../helpers/reports';

/**
 * The inbound SMTP server as the CLI starts it: `herald inbound` on its own, and inside
 * `serve` when INBOUND_SMTP_PORT is set; each stops with its process's shutdown. (What it does
 * with the mail it receives: test/delivery/bounces.test.ts.)
 */
const logger = createLogger('silent');

function config(env: Record<string, string>) {
  return loadConfig({
    DATABASE_URL: testDatabaseUrl(),
    DATA_DIR: path.join(os.tmpdir(), `herald-inbound-${process.pid}`),
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    WORKER: '0',
    ...env,
  });
}

async function answers(port: number): Promise<string> {
  const mta = remoteMta(port);
  try {
    return await mta.deliver('anything@bounces.example.test', vacation({ to: 'anything@bounces.example.test', from: 'x@example.com' }));
  } finally {
    mta.close();
  }
}

describe('herald inbound', () => {
  it('receives mail for BOUNCE_DOMAIN until it is shut down', async () => {
    const port = await freePort();
    const running = await startInbound(config({ BOUNCE_DOMAIN: 'bounces.example.test', INBOUND_SMTP_PORT: String(port) }), logger);
    try {
      expect(await answers(port)).toMatch(/^250/);
    } finally {
      await running.shutdown('test');
    }
    await expect(answers(port)).rejects.toMatchObject({ code: 'ESOCKET' });
  });

  it('refuses to start without BOUNCE_DOMAIN', async () => {
    // INBOUND_SMTP_PORT without it is refused by loadConfig (test/unit/config.test.ts); `herald inbound` needs no port.
    await expect(startInbound(config({}), logger)).rejects.toThrow(/herald inbound needs BOUNCE_DOMAIN/);
  });
});

describe('herald serve with INBOUND_SMTP_PORT', () => {
  it('runs the inbound server beside the API and stops it on shutdown', async () => {
    const [port, inbound] = await freePorts(2);
    const running = await startServer(config({ PORT: String(port), BOUNCE_DOMAIN: 'bounces.example.test', INBOUND_SMTP_PORT: String(inbound) }), logger);
    try {
      expect(await answers(inbound)).toMatch(/^250/);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    } finally {
      await running.shutdown('test');
    }
    await expect(answers(inbound)).rejects.toMatchObject({ code: 'ESOCKET' });
  });
});

describe('a message that cannot be processed', () => {
  it('is answered 451, so the remote MTA keeps it and tries again', async () => {
    // A database nobody listens on: the first query fails.
    const url = new URL(testDatabaseUrl());
    url.port = String(await freePort());
    const db = createDb({ url: url.toString(), poolMax: 1, logger });
    const server = await startInboundSmtp({ config: config({ BOUNCE_DOMAIN: 'bounces.example.test' }), db, logger }, { port: 0, host: '127.0.0.1' });
    const mta = remoteMta(server.port);
    try {
      const to = `bounce+${'ab'.repeat(28)}@bounces.example.test`;
      await expect(mta.deliver(to, dsn({ to, recipient: 'x@example.com' }))).rejects.toMatchObject({ responseCode: 451 });
    } finally {
      mta.close();
      await server.close();
      await db.destroy();
    }
  });
});

describe('STARTTLS', () => {
  it('is offered with INBOUND_TLS_CERT/KEY, and a client that requires TLS delivers', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'herald-tls-'));
    const [cert, key] = [path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')];
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=mx.example.test'], { stdio: 'ignore' });
    const port = await freePort();
    const running = await startInbound(
      config({ BOUNCE_DOMAIN: 'bounces.example.test', INBOUND_SMTP_PORT: String(port), INBOUND_TLS_CERT: cert, INBOUND_TLS_KEY: key }),
      logger,
    );
    const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, requireTLS: true, tls: { rejectUnauthorized: false } });
    try {
      const info = await transport.sendMail({ envelope: { from: '', to: ['x@bounces.example.test'] }, raw: vacation({ to: 'x@bounces.example.test', from: 'x@example.com' }) });
      expect(info.response).toMatch(/^250/);
      // Without the files the server offers no STARTTLS: the same client gives up.
      await running.shutdown('test');
      const plain = await startInbound(config({ BOUNCE_DOMAIN: 'bounces.example.test', INBOUND_SMTP_PORT: String(port) }), logger);
      try {
        await expect(transport.sendMail({ envelope: { from: '', to: ['x@bounces.example.test'] }, raw: 'Subject: x\r\n\r\nx\r\n' })).rejects.toThrow(/STARTTLS/);
      } finally {
        await plain.shutdown('test');
      }
    } finally {
      transport.close();
      await running.shutdown('test');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('configuration', () => {
  it('needs both INBOUND_TLS_CERT and INBOUND_TLS_KEY or neither, and a domain name for BOUNCE_DOMAIN', () => {
    expect(() => config({ INBOUND_TLS_CERT: '/tmp/cert.pem' })).toThrow(/INBOUND_TLS_CERT and INBOUND_TLS_KEY/);
    expect(() => config({ BOUNCE_DOMAIN: 'not a domain' })).toThrow(/BOUNCE_DOMAIN/);
    expect(config({ BOUNCE_DOMAIN: 'Bounces.Example.COM' }).bounceDomain).toBe('bounces.example.com');
  });
});
