import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { Deps } from '../context';
import { processInbound } from './inbound';

/**
 * Herald's inbound SMTP server (`herald inbound`, or inside `serve` with INBOUND_SMTP_PORT):
 * the MX of BOUNCE_DOMAIN, receiving the DSNs sent to VERP addresses and the complaint (ARF)
 * reports of feedback loops. Only recipients of BOUNCE_DOMAIN are accepted (550 otherwise:
 * it is no open relay and no mailbox), no AUTH, STARTTLS only with INBOUND_TLS_CERT/KEY,
 * messages up to INBOUND_MAX_BYTES (552 above), INBOUND_MAX_CLIENTS connections at once.
 *
 * Every accepted message is answered 250 once processed, also when it was ignored (a vacation
 * reply, a forged report): bouncing it back would only make more mail. Only when processing
 * failed (the database is down) the answer is 451, so the sending server tries again later.
 */
export interface InboundSmtp {
  port: number;
  close(): Promise<void>;
}

type SmtpError = Error & { responseCode?: number };

function smtpError(code: number, message: string): SmtpError {
  const err: SmtpError = new Error(message);
  err.responseCode = code;
  return err;
}

export async function startInboundSmtp(
  deps: Pick<Deps, 'db' | 'config' | 'logger'>,
  listen: { port?: number; host?: string } = {},
): Promise<InboundSmtp> {
  const { config, logger } = deps;
  const domain = config.bounceDomain;
  if (!domain) throw new Error('The inbound SMTP server needs BOUNCE_DOMAIN (the domain whose mail it receives).');
  const tls = config.inboundTlsCert && config.inboundTlsKey;
  const log = logger.child({ component: 'inbound-smtp' });
  // Loaded here, not at start-up: only `herald inbound` or INBOUND_SMTP_PORT need it (≈ 11 MB of modules).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { SMTPServer } = require('smtp-server') as typeof import('smtp-server');
  const server = new SMTPServer({
    name: config.inboundHostname,
    banner: 'Herald bounce processor',
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(tls ? { key: fs.readFileSync(config.inboundTlsKey!), cert: fs.readFileSync(config.inboundTlsCert!) } : {}),
    size: config.inboundMaxBytes,
    maxClients: config.inboundMaxClients,
    // A client gets a minute of silence at most (the default is two).
    socketTimeout: 60_000,
    closeTimeout: config.shutdownTimeoutMs,
    logger: false,
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const at = address.address.lastIndexOf('@');
      if (at < 1 || address.address.slice(at + 1).toLowerCase() !== domain) {
        return callback(smtpError(550, `5.7.1 <${address.address}>: this server only receives mail for ${domain}`));
      }
      callback();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) {
      const chunks: Buffer[] = [];
      let bytes = 0;
      let answered = false;
      const answer = (err: Error | null, message?: string) => {
        if (answered) return;
        answered = true;
        callback(err, message);
      };
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= config.inboundMaxBytes) chunks.push(chunk);
      });
      stream.on('error', (err) => answer(err));
      stream.on('end', () => {
        if (stream.sizeExceeded) return answer(smtpError(552, `5.3.4 Message exceeds the maximum size of ${config.inboundMaxBytes} bytes`));
        const envelopeRecipients = session.envelope.rcptTo.map((r) => r.address);
        processInbound(deps, Buffer.concat(chunks), { via: 'smtp', envelopeRecipients }).then(
          ({ handled }) => answer(null, handled ? 'Report processed' : 'Accepted'),
          (err: unknown) => {
            log.error({ err }, 'inbound message could not be processed; the sender will retry');
            answer(smtpError(451, '4.3.0 Temporary failure, try again later'));
          },
        );
      });
    },
  });
  server.on('error', (err) => log.warn({ err }, 'inbound SMTP connection error'));
  const port = listen.port ?? config.inboundSmtpPort ?? 25;
  const host = listen.host ?? config.inboundHost;
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.server.address() as AddressInfo).port;
  log.info({ port: bound, host, domain, starttls: Boolean(tls) }, 'inbound SMTP listening');
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
