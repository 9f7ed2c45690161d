import { z } from 'zod';
import { flag, id, optionalText, text } from '../../http/fields';
import { EVENT_TYPES } from '../../events/types';
import { WebhookBatchStatus } from '../../states';
import { parseWebhookUrl, RefusedTarget } from '../../webhooks/ssrf';
import { flagValue, intId, timestamp } from '../shared/schemas';

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

/** `event_types`: a comma list (a form array is read the same); empty or absent means every type. */
const eventTypes = () =>
  z
    .preprocess((v) => (Array.isArray(v) ? v.join(',') : v), z.string().max(2000).optional())
    .transform((v, ctx) => {
      const types = [...new Set((v ?? '').split(',').map((t) => t.trim()).filter(Boolean))];
      if (types.some((t) => !KNOWN_TYPES.has(t))) {
        ctx.addIssue({ code: 'custom', message: 'The selected :attribute is invalid.' });
        return z.NEVER;
      }
      return types;
    })
    .meta({ description: `comma-separated event types (empty: all of them): ${EVENT_TYPES.join(', ')}`, example: 'delivered,bounced' });

/** http(s) only; whether the host is public is checked against DNS by the service. */
const webhookUrl = () =>
  text(2048).superRefine((v, ctx) => {
    try {
      parseWebhookUrl(v);
    } catch (err) {
      if (!(err instanceof RefusedTarget)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
    }
  });

/** A save is the whole record: absent fields take their defaults (every type, no description, active). */
export const saveWebhookBody = z.object({
  id: id().optional().meta({ description: 'the webhook to change; absent: a new webhook' }),
  url: webhookUrl().meta({ description: 'http:// or https:// URL of a public host', example: 'https://example.com/herald' }),
  event_types: eventTypes(),
  description: optionalText(2000),
  is_active: flag().optional().meta({ description: '1 (default) = events are delivered, 0 = paused' }),
});
export type SaveWebhookInput = z.infer<typeof saveWebhookBody>;

export const webhookRecord = z.strictObject({
  id: intId(),
  url: z.string(),
  event_types: z.array(z.string()).meta({ description: 'empty: every event type' }),
  description: z.string(),
  is_active: flagValue(),
  failing_since: timestamp().nullable().meta({ description: 'since when every attempt failed; null when the last one succeeded' }),
  created_at: timestamp(),
  updated_at: timestamp(),
});
export type WebhookRecord = z.infer<typeof webhookRecord>;

export const createdWebhook = z.strictObject({
  id: intId(),
  secret: z.string().meta({ description: 'whsec_… — shown only here; verify signatures with it', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }),
});

export const webhookBatchRecord = z.strictObject({
  id: intId(),
  webhook_id: intId(),
  msg_id: z.string().meta({ description: 'the webhook-id header of every attempt of this batch' }),
  type: z.string(),
  event_ids: z.array(intId()),
  status: z.enum(WebhookBatchStatus),
  http_status: intId().nullable().meta({ description: 'the endpoint’s answer to the last attempt (null: none)' }),
  error: z.string().nullable(),
  attempt: intId(),
  next_attempt_at: timestamp().nullable().meta({ description: 'when a pending batch is tried next' }),
  created_at: timestamp(),
  updated_at: timestamp(),
});
export type WebhookBatchRecord = z.infer<typeof webhookBatchRecord>;

export const testResult = z.strictObject({
  status: intId().nullable().meta({ description: 'the endpoint’s HTTP status (null: no answer)' }),
  error: z.string().nullable(),
});
