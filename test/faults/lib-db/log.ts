import { createLogger, type Logger } from '../../../src/logger';

export interface CapturedLog {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
  /** Lines whose msg equals `msg`. */
  find(msg: string): Array<Record<string, unknown>>;
}

/** A pino logger (the app's own, with its redaction) writing into memory. */
export function captureLog(level = 'info'): CapturedLog {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger(level, {
    write(line: string) {
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line });
      }
    },
  });
  return { logger, lines, find: (msg) => lines.filter((l) => l.msg === msg) };
}
