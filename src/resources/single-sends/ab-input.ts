import type { Knex } from 'knex';
import { AB_DEFAULTS, type AbType, type VariationInput } from '../../ab/settings';
import type { AbPlan } from '../../ab/store';
import type { Ctx } from '../../context';
import type { FieldErrors } from '../../http/errors';
import { senderAddress } from '../../mail/sender-address';
import { findVerifiedSender, senderIdMessages } from '../senders/senders.service';
import { RECIPIENT_REF, type SingleSendSaveInput } from './single-sends.schemas';
import { isUsableTemplate } from '../shared/design-rules';

/**
 * The rules of a send's A/B fields that lie between fields or in the database (their shapes and
 * ranges are the schema's, single-sends.schemas.ts), in Laravel's words like the rest of the
 * send's (docs/decisions.md, "A/B tests"). Errors are keyed as Laravel keys nested fields:
 * `ab_variations.0.subject`. Returns the plan to save, or undefined for an ordinary send.
 */

const AB_FIELDS = ['ab_variations', 'ab_test_percentage', 'ab_duration_minutes', 'ab_winner_criteria', 'ab_confidence', 'ab_if_inconclusive'] as const;

/** The field each type of test varies, by its name in a variation. */
const VARIED: Record<AbType, 'subject' | 'template_id' | 'sender_id'> = { subject: 'subject', design: 'template_id', sender: 'sender_id' };
const VARIATION_FIELDS = ['subject', 'template_id', 'template_html', 'template_json', 'sender_id'] as const;
/** The fields a variation of each type may hold. */
const ALLOWED: Record<AbType, ReadonlyArray<(typeof VARIATION_FIELDS)[number]>> = {
  subject: ['subject'],
  design: ['template_id', 'template_html', 'template_json'],
  sender: ['sender_id'],
};

const attribute = (key: string) => key.replace(/_/g, ' ');

type Variation = NonNullable<SingleSendSaveInput['ab_variations']>[number];

/** `draft`: a draft's audience is not counted yet (it is when the draft is scheduled). */
export async function resolveAbInput(
  ctx: Ctx,
  trx: Knex.Transaction,
  input: SingleSendSaveInput,
  errors: FieldErrors,
  opts: { draft?: boolean } = {},
): Promise<AbPlan | undefined> {
  const type = input.ab_test_type;
  if (!type) {
    const present = AB_FIELDS.find((f) => input[f] !== undefined);
    if (present) errors.ab_test_type = [`The ab test type field is required when ${attribute(present)} is present.`];
    return undefined;
  }
  const given = input.ab_variations ?? [];
  if (given.length === 0) {
    errors.ab_variations = ['The ab variations field is required when ab test type is present.'];
    return undefined;
  }
  const variations: VariationInput[] = [];
  for (const [i, v] of given.entries()) {
    const resolved = await resolveVariation(ctx, trx, type, v, `ab_variations.${i}`, errors);
    if (resolved) variations.push(resolved);
  }
  if (variations.length !== given.length) return undefined;
  if (!opts.draft) await checkAudience(ctx, trx, input.recipient_id ?? [], variations.length + 1, errors);
  return {
    settings: {
      type,
      testPercentage: input.ab_test_percentage ?? AB_DEFAULTS.testPercentage,
      durationMinutes: input.ab_duration_minutes ?? AB_DEFAULTS.durationMinutes,
      winnerCriteria: input.ab_winner_criteria ?? AB_DEFAULTS.winnerCriteria,
      confidence: input.ab_confidence ?? AB_DEFAULTS.confidence,
      ifInconclusive: input.ab_if_inconclusive ?? AB_DEFAULTS.ifInconclusive,
    },
    variations,
  };
}

/** One variation of B–F: the field of the test's type, and nothing else; a design or sender that exists (and a verified sender). */
async function resolveVariation(ctx: Ctx, trx: Knex.Transaction, type: AbType, v: Variation, key: string, errors: FieldErrors): Promise<VariationInput | undefined> {
  let ok = true;
  const fail = (field: string, message: string) => {
    (errors[`${key}.${field}`] ??= []).push(message);
    ok = false;
  };
  for (const field of VARIATION_FIELDS) {
    if (v[field] !== undefined && !ALLOWED[type].includes(field)) fail(field, `The ${attribute(`${key}.${field}`)} field is prohibited when ab test type is ${type}.`);
  }
  const varied = VARIED[type];
  if (v[varied] === undefined) fail(varied, `The ${attribute(`${key}.${varied}`)} field is required.`);
  if (!ok) return undefined;
  switch (type) {
    case 'subject':
      return { subject: v.subject };
    case 'design': {
      if (v.template_html !== undefined && v.template_json !== undefined) {
        fail('template_html', `The ${attribute(`${key}.template_html`)} field is prohibited when ${attribute(`${key}.template_json`)} is present.`);
      }
      const template = await isUsableTemplate(ctx, trx, v.template_id!);
      if (!template) fail('template_id', `The selected ${attribute(`${key}.template_id`)} is invalid.`);
      return ok ? { templateId: v.template_id, templateHtml: v.template_html ?? null, templateJson: v.template_json ?? null } : undefined;
    }
    case 'sender': {
      // Held FOR SHARE until the send is saved, like the send's own sender.
      const sender = await findVerifiedSender(ctx, v.sender_id!, { db: trx, lock: true });
      if (typeof sender === 'string') {
        fail('sender_id', senderIdMessages[sender].replace('sender id', attribute(`${key}.sender_id`)));
        return undefined;
      }
      return {
        senderId: v.sender_id,
        sender: {
          fromSender: sender.from_email,
          replyTo: sender.reply_to_email,
          senderName: sender.from_name,
          senderAddress: await senderAddress(trx, sender),
        },
      };
    }
  }
}

/**
 * An A/B test gives every variation at least one recipient of its test group (src/ab/split.ts,
 * testGroupSize), so its audience must have one per variation: refused here when even an upper
 * bound of it is smaller — every live contact of its contact types and of its segments' contact
 * types, and its segments' hand-added recipients, before segment rules, exclusions, suppressions
 * and duplicate addresses, counted only up to the number needed. The exact audience is known
 * when the send starts; one that has shrunk below this by then is all of it the test group.
 */
async function checkAudience(ctx: Ctx, trx: Knex.Transaction, recipientIds: string[], variations: number, errors: FieldErrors): Promise<void> {
  if (Object.keys(errors).some((k) => k.startsWith('recipient_id'))) return;
  const refs = recipientIds.map((v) => RECIPIENT_REF.exec(v)).filter((m) => m !== null);
  const ids = (table: string) => refs.filter((m) => m[1] === table).map((m) => Number(m[2]));
  const { rows } = await trx.raw(
    `SELECT count(*)::int AS n FROM (
       SELECT 1 FROM contacts c
       WHERE c.user_id = :userId AND c.deleted_at IS NULL
         AND (c.contact_type_id = ANY(:types) OR c.contact_type_id IN (SELECT s.contact_type_id FROM segments s WHERE s.user_id = :userId AND s.id = ANY(:segments)))
       UNION ALL
       SELECT 1 FROM segment_recipients r WHERE r.user_id = :userId AND r.segment_id = ANY(:segments)
       LIMIT :variations) audience`,
    { userId: ctx.userId, types: ids('contacts'), segments: ids('segments'), variations },
  );
  if (rows[0].n < variations) {
    errors.recipient_id = [`The recipient id must have at least ${variations} recipients for an A/B test of ${variations} variations.`];
  }
}
