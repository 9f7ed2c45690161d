import type { Knex } from 'knex';
import type { KeyCache } from './accounts/key-cache';
import type { Config } from './config';
import type { Mailer } from './mail/mailer';
import type { Logger } from './logger';
import type { Role } from './team/permissions';

/**
 * Who is acting (issue 37): a user of the account signed in to the dashboard, or the account's API
 * keys (in the API, in a dashboard session opened with the keys, and in the CLI), which act as the
 * owner. Permissions are checked against `role`; the audit log records the rest.
 */
export interface Actor {
  /** The user (members.id); null for the account's keys. */
  memberId: number | null;
  role: Role;
  /** What the audit log shows: the user's email, or "API keys". */
  label: string;
  via: 'api' | 'dashboard' | 'cli';
  /** The client address (req.ip); null in the CLI. */
  address: string | null;
}

/** What every service function receives first: the authenticated account and the database. */
export interface Ctx {
  userId: number;
  db: Knex;
  /** Who acts; absent where nobody does (the worker, internal reads): such code is not checked and writes no audit entry. */
  actor?: Actor;
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
