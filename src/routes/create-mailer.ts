import path from 'node:path';
import type { Knex } from 'knex';
import type { Config } from '../config';
import type { Dns } from '../dns';
import { recordAccountEvent } from '../events/account-events';
import type { Logger } from '../logger';
import { outboxMailer, type Mailer } from '../mail/mailer';
import { RoutedMailer } from './router';

/**
 * Where mail goes: through the delivery routes (SMTP_ROUTES, or SMTP_URL as the one route
 * `default`: ./router.ts), or, with neither, to DATA_DIR/outbox. Composed here, above both
 * src/mail and the router, so neither imports the other's callers (no import cycle: the router
 * records its `route.blocked` event through the function it is handed).
 */
export function createMailer(config: Config, deps: { db: Knex; logger: Logger; dns: Dns }): Mailer {
  if (!config.routes.length) return outboxMailer(path.join(config.dataDir, 'outbox'));
  return new RoutedMailer(config, config.routes, {
    ...deps,
    recordBlock: (userId, subject, facts) => recordAccountEvent(deps, userId, 'route.blocked', subject, facts),
  });
}
