import { z } from 'zod';
import { integer } from '../../http/fields';
import { EVENT_TYPES } from '../../events/types';
import { intId, timestamp } from '../shared/schemas';

const KNOWN = new Set<string>(EVENT_TYPES);

/** An ISO 8601 date or date-time (Laravel's `date` rule wording on failure). */
const isoDate = () =>
  z
    .string()
    .refine((v) => /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(v) && !Number.isNaN(Date.parse(v)), {
      message: 'The :attribute is not a valid date.',
    })
    .optional();

/** GET /events: every filter optional; `type` is a comma list of event types. */
export const eventsQuery = z.object({
  type: z
    .string()
    .transform((v) => v.split(',').map((t) => t.trim()).filter(Boolean))
    .refine((types) => types.every((t) => KNOWN.has(t)), { message: 'The selected :attribute is invalid.' })
    .optional()
    .meta({ description: `comma list of ${EVENT_TYPES.join(', ')}` }),
  email: z.string().max(254).optional().meta({ description: 'case-insensitive' }),
  single_send_utr: z.string().max(64).optional(),
  automation_utr: z.string().max(64).optional(),
  since: isoDate().meta({ description: 'ISO 8601; events that occurred at or after it' }),
  until: isoDate().meta({ description: 'ISO 8601; events that occurred before it' }),
  cursor: z
    .string()
    .regex(/^\d{1,18}$/, { message: 'The :attribute is invalid.' })
    .optional()
    .meta({ description: 'next_cursor of the previous page' }),
  limit: integer(1, 1000).optional().meta({ description: '1–1000, default 100' }),
});
export type EventsQuery = z.output<typeof eventsQuery>;

export const eventRecord = z.strictObject({
  id: intId(),
  type: z.string(),
  email: z.string().nullable(),
  single_send_utr: z.string().nullable(),
  automation_utr: z.string().nullable(),
  occurred_at: timestamp(),
  data: z.record(z.string(), z.unknown()),
});

export const eventsMessage = z.object({
  events: z.array(eventRecord),
  next_cursor: z.string().nullable().meta({ description: 'continues after the last event given; null when nothing more exists' }),
});
