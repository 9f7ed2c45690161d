import { z } from 'zod';
import { STREAMS } from '../../routes/types';
import { timestamp } from '../shared/schemas';

const quota = (what: string) => z.number().int().nullable().meta({ description: `${what}; null: no such quota` });

/** One route as an account sees it (src/routes/views.ts routeViews): never its URL or credentials. */
export const routeRecord = z.object({
  name: z.string(),
  status: z.enum(['up', 'down', 'throttled', 'warming']).meta({
    description:
      '`up`: sending; `down`: its relay failed ROUTE_DOWN_AFTER times in a row, probed every ROUTE_PROBE_SECONDS; ' +
      '`throttled`: its relay asked to slow down, its rate is halved and climbs back; `warming`: up, inside its warm-up schedule',
  }),
  weight: z.number().meta({ description: 'Its share of messages among the routes with room' }),
  max_per_second: quota('Messages a second at most, across every worker'),
  max_per_hour: quota('Messages an hour at most'),
  max_per_day: quota('Messages a day at most'),
  streams: z.array(z.enum(STREAMS as [string, ...string[]])).meta({ description: '`marketing` (sends, automations) and/or `system` (Herald’s own mail)' }),
  sent_last_hour: z.number().int().meta({
    description: 'Messages handed to it in the current UTC hour by the whole installation. With an hourly cap (max_per_hour or warm-up) it is what the cap counts, including messages a process has reserved and not yet sent; without one, messages sent, each process adding its own every 2 seconds',
  }),
  sent_today: z.number().int().meta({
    description: 'Messages handed to it in the current UTC day by the whole installation, counted as sent_last_hour is (with max_per_day: what the cap counts)',
  }),
  warmup: z
    .object({ day: z.number().int(), cap_per_hour: z.number().int() })
    .nullable()
    .meta({ description: 'Today’s step of its warm-up schedule (day 0 first); null: no warm-up, or past it' }),
  down_since: timestamp().nullable(),
  last_error: z.string().nullable().meta({ description: 'The last error its relay answered, credentials removed' }),
  blocked_providers: z
    .array(z.object({ provider: z.string(), since: timestamp(), until: timestamp() }))
    .meta({ description: 'Receiving providers that refuse it now (a block text); their recipients go through other routes until `until`' }),
});
