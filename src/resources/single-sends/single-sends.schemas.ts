import { z } from 'zod';
import { decimal, email, flag, id, integer, longText, optionalList, list, text, optionalText } from '../../http/fields';
import { AB_CRITERIA, AB_IF_INCONCLUSIVE, AB_TYPES } from '../../ab/settings';
import { ScheduleType, SendStatus } from '../../states';
import { datetime, intId, oneOf, timestamp } from '../shared/schemas';

/** `contacts_<contact type id>` or `segments_<segment id>`. */
export const RECIPIENT_REF = /^(contacts|segments)_(\d{1,10})$/;

const ref = z.union([z.string(), z.number()]).transform(String);

/**
 * The optional A/B test of a send (docs/decisions.md, "A/B tests"): none of them means an ordinary
 * send. Each variation holds the field of the test's type only; the rules between fields (a type
 * needs variations, a variation its field, a sender must be verified) are the service's.
 */
const abVariation = z.object({
  subject: optionalText(255),
  template_id: id().optional(),
  template_json: longText(),
  template_html: longText(),
  sender_id: id().optional(),
});

function abFields() {
  return {
    ab_test_type: z.enum(AB_TYPES).optional().meta({ description: 'an A/B test of the subject, the design or the sender; absent: an ordinary send' }),
    ab_variations: optionalList(abVariation, 5).meta({
      description: 'variations B to F (ab_variations[i][subject], [template_id] (+ template_html/template_json), [sender_id]); the send’s own is A',
    }),
    ab_test_percentage: integer(1, 100).optional().meta({ description: 'share of the audience in the test phase (default 20; 100: no winner phase)' }),
    ab_duration_minutes: integer(1, 10080).optional().meta({ description: 'how long the test runs after its last message left the queue (default 240)' }),
    ab_winner_criteria: z.enum(AB_CRITERIA).optional().meta({ description: 'open, click (default) or manual' }),
    ab_confidence: decimal(0.5, 0.999).optional().meta({ description: 'probability of being best that makes a winner significant (default 0.95)' }),
    ab_if_inconclusive: z.enum(AB_IF_INCONCLUSIVE).optional().meta({ description: 'send_leader (default), send_original or wait' }),
  };
}

/** Fields shared by create and update (spec table "Fields shared by create and update"). */
export const singleSendBody = z.object({
  template_id: id().meta({ description: 'a template id; 1 selects the blank Custom design' }),
  template_json: longText().meta({ description: 'editor JSON of the design (kept for the editor); excludes template_html' }),
  template_html: longText().meta({ description: 'the design’s HTML with ((placeholders)); excludes template_json' }),
  sender_id: id(),
  unsubscribe_group_id: id(),
  single_send_name: text(255),
  subject: text(255),
  preheader: text(255),
  recipient_id: list(ref, 100).meta({ description: 'contacts_<contact type id> or segments_<segment id>' }),
  exclude_specific_recipient_id: optionalList(ref, 100),
  schedule_type: flag(),
  schedule_date: optionalText(10).meta({ description: 'YYYY-MM-DD (UTC), with schedule_type 1' }),
  schedule_time: optionalText(8).meta({ description: 'HH:MM or HH:MM:SS (UTC), with schedule_type 1' }),
  ...abFields(),
});
export type SingleSendInput = z.infer<typeof singleSendBody>;

/** The fields a send needs before it can be scheduled; a draft may lack any of them. */
const NEEDED_TO_SEND = ['template_id', 'sender_id', 'unsubscribe_group_id', 'subject', 'preheader', 'recipient_id', 'schedule_type'] as const;

/**
 * POST /single/send/create and /update: the spec's fields, and `draft`. Without `draft=1` every
 * field the spec requires is required (singleSendBody's rules, in the same words); with it only
 * the name is, and every other field that is given is checked as always. Missing fields are
 * reported together with the other fields' errors (the check runs whatever else failed).
 */
export const singleSendSaveBody = singleSendBody
  .partial(Object.fromEntries(NEEDED_TO_SEND.map((f) => [f, true])) as { [K in (typeof NEEDED_TO_SEND)[number]]: true })
  .extend({
    draft: flag()
      .optional()
      .meta({ description: 'Herald extension: 1 saves the send as a draft (status 0) that needs only its name; it is sent once scheduled (POST /single/send/schedule)' }),
  })
  .superRefine(
    (v, ctx) => {
      if (v.draft === 1) return;
      for (const field of NEEDED_TO_SEND) {
        if (v[field] === undefined && !ctx.issues.some((i) => i.path?.[0] === field)) {
          ctx.addIssue({ code: 'custom', path: [field], input: undefined, message: `The ${field.replace(/_/g, ' ')} field is required.` });
        }
      }
    },
    // Also when other fields failed (so every message comes at once), but only on an object.
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );
export type SingleSendSaveInput = z.output<typeof singleSendSaveBody>;

/** POST /single/send/schedule: when it goes out (absent: the send's own schedule). */
export const scheduleBody = z.object({
  send_at: optionalText(19).meta({ description: 'YYYY-MM-DD HH:MM[:SS] (UTC), in the future; replaces the send’s schedule_type/date/time' }),
});

/** GET /single/send/preview: as which contact (absent: sample values). */
export const previewQuery = z.object({
  contact_id: id().optional().meta({ description: 'a contact of the account whose values fill the placeholders; absent: sample values' }),
});

const renderedContent = { subject: z.string(), html: z.string(), text: z.string() };

/** A preview: what the contact gets; an A/B send's variations each, A first (A's also at the top). */
export const previewResponse = z.object({
  ...renderedContent,
  variations: z
    .array(z.object({ variation: z.string().meta({ description: 'A … F' }), ...renderedContent }))
    .optional()
    .meta({ description: 'A/B sends only: every variation’s message, A (the send’s own) first' }),
});

/** POST /single/send/test: 1–10 addresses, and optionally the contact whose values fill the placeholders. */
export const testSendBody = z.object({
  emails: list(email(), 10).meta({ description: 'emails[0] … emails[9]: where the test copies go (one of each variation to each)' }),
  contact_id: id().optional().meta({ description: 'a contact of the account whose values fill the placeholders; absent: sample values' }),
});

const recipientRef = z.strictObject({ id: z.string(), table: z.string() });

export const singleSendRecord = z.strictObject({
  id: intId(),
  user_id: intId(),
  template_id: intId().nullable().meta({ description: 'null only on a draft that has none yet' }),
  sender_id: intId().nullable().meta({ description: 'null only on a draft that has none yet' }),
  unsubscribe_group_id: intId().nullable().meta({ description: 'null only on a draft that has none yet' }),
  recipient_id: z.array(recipientRef),
  exclude_specific_recipient_id: z.array(recipientRef),
  single_send_name: z.string(),
  subject: z.string(),
  preheader: z.string(),
  from_sender: z.string(),
  reply_to: z.string(),
  sender_name: z.string().nullable(),
  sender_address: z.string().nullable(),
  schedule_type: oneOf(ScheduleType),
  schedule_date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  schedule_time: z.string().regex(/^\d{2}:\d{2}:\d{2}$/),
  status: oneOf(SendStatus),
  utr: z.uuid(),
  template_json: z.string().nullable(),
  template_html: z.string().nullable(),
  triggered: z.number().int(),
  delivered: z.number().int(),
  unique_opens: z.number().int(),
  total_opens: z.number().int(),
  bounces: z.number().int(),
  unsubscribes: z.number().int(),
  unique_open_token: z.record(z.string(), z.string()),
  sent_at: datetime().nullable(),
  created_at: timestamp(),
  updated_at: timestamp(),
});

/** The A/B settings a send's details and list carry (A/B sends only), as create and update take them. */
export const abSettingsRecord = z.object({
  ab_test_type: z.enum(AB_TYPES),
  ab_variations: z.array(
    z.object({ subject: z.string().optional(), template_id: intId().optional(), template_html: z.string().nullable().optional(), template_json: z.string().nullable().optional(), sender_id: intId().optional() }),
  ),
  ab_test_percentage: z.number().int(),
  ab_duration_minutes: z.number().int(),
  ab_winner_criteria: z.enum(AB_CRITERIA),
  ab_confidence: z.number(),
  ab_if_inconclusive: z.enum(AB_IF_INCONCLUSIVE),
});

/** A send as details and the list give it: the spec's record, plus the A/B settings on an A/B send. */
export const singleSendResponse = singleSendRecord.extend(abSettingsRecord.partial().shape);

/** POST /single/send/ab/winner: the index of the winning variation (0 is A, the send itself). */
export const abWinnerBody = z.object({
  variation: integer(0, 5).meta({ description: 'the winning variation’s index: 0 for A (the send’s own), 1 for B …' }),
});
