import pino, { type Logger } from 'pino';

/** Header names are lower-cased by Node; the SecretKey never reaches a log line. */
export const REDACT_PATHS = [
  'req.headers.secretkey',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.secretkey',
  'secret_key',
  'secretKey',
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
}

export type { Logger };
