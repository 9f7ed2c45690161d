import pino, { type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

/** Header names are lower-cased by Node; the SecretKey never reaches a log line. */
export const REDACT_PATHS = [
  'req.headers.secretkey',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.secretkey',
  'secret_key',
  'secretKey',
];

interface LoggerOptions {
  /** Readable lines instead of JSON; by default when the destination is stdout and a terminal. */
  pretty?: boolean;
}

/**
 * JSON lines (for log collectors, Docker, CI and tests), or readable lines for a person at a
 * terminal: `npm start` in a terminal prints `12:00:01.234 INFO: GET /contacts-type → 200 in 3 ms`.
 * pino-pretty is loaded only then, so JSON output costs nothing more.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, opts: LoggerOptions = {}): Logger {
  const options = { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  const pretty = opts.pretty ?? (destination === undefined && process.stdout.isTTY === true);
  if (pretty) return pino(options, prettyStream(destination));
  return destination ? pino(options, destination) : pino(options);
}

function prettyStream(destination?: pino.DestinationStream): pino.DestinationStream {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const pretty = require('pino-pretty') as typeof import('pino-pretty');
  const options: PrettyOptions = {
    colorize: destination === undefined,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,req,res,responseTime',
    singleLine: true,
    sync: true,
    // A request's line says what happened; its headers stay in the JSON logs.
    messageFormat: (log, messageKey) => {
      const req = log.req as { method?: string; url?: string } | undefined;
      const res = log.res as { statusCode?: number } | undefined;
      if (!req || !res) return String(log[messageKey] ?? '');
      const aborted = log[messageKey] === 'request aborted' ? ' (aborted)' : '';
      return `${req.method} ${req.url} → ${res.statusCode} in ${String(log.responseTime)} ms${aborted}`;
    },
    ...(destination ? { destination: destination as NodeJS.WritableStream } : {}),
  };
  return pretty(options);
}

export type { Logger };
