import type { Knex } from 'knex';
import type { KeyCache } from './accounts/key-cache';
import type { Config } from './config';
import type { Mailer } from './mail/mailer';
import type { Logger } from './logger';

/** What every service function receives first: the authenticated account and the database. */
export interface Ctx {
  userId: number;
  db: Knex;
}

/** Process-wide dependencies handed to createApp() and the worker. */
export interface Deps {
  config: Config;
  db: Knex;
  logger: Logger;
  /** Where outgoing mail goes (SMTP pool or the outbox directory). */
  mailer: Mailer;
  /** Key pairs verified recently (the server has one; without it every request asks the database). */
  keys?: KeyCache;
}
