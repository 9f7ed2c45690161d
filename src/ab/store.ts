import type { Knex } from 'knex';
import { AbStatus } from '../states';
import type { AbCriteria, AbIfInconclusive, AbSettings, AbType, VariationInput } from './settings';

/**
 * An A/B test's settings and variations as `ab_tests` and `single_send_variations` keep them
 * (docs/decisions.md, "A/B tests"): written with the send by create and update (an update is a
 * full replacement: without A/B fields the send is an ordinary one again), copied by duplicate,
 * and read back in the fields create and update take.
 */

export interface AbPlan {
  settings: AbSettings;
  /** Variations B to F (index 1 to 5); A is the send itself. */
  variations: VariationInput[];
}

function variationRow(userId: number, singleSendId: number, idx: number, v: VariationInput | undefined) {
  return {
    user_id: userId,
    single_send_id: singleSendId,
    idx,
    subject: v?.subject ?? null,
    template_id: v?.templateId ?? null,
    template_html: v?.templateHtml ?? null,
    template_json: v?.templateJson ?? null,
    sender_id: v?.senderId ?? null,
    from_sender: v?.sender?.fromSender ?? null,
    reply_to: v?.sender?.replyTo ?? null,
    sender_name: v?.sender?.senderName ?? null,
    sender_address: v?.sender?.senderAddress ?? null,
  };
}

/**
 * Replaces the A/B test of a send that has not started (its variations included), or removes it
 * when `plan` is undefined. Runs in the caller's transaction.
 */
export async function saveAbTest(trx: Knex.Transaction, userId: number, singleSendId: number, plan: AbPlan | undefined): Promise<void> {
  const of = { user_id: userId, single_send_id: singleSendId };
  await trx('single_send_variations').where(of).delete();
  await trx('ab_tests').where(of).delete();
  if (!plan) return;
  const s = plan.settings;
  await trx('ab_tests').insert({
    ...of,
    type: s.type,
    test_percentage: s.testPercentage,
    duration_minutes: s.durationMinutes,
    winner_criteria: s.winnerCriteria,
    confidence: s.confidence,
    if_inconclusive: s.ifInconclusive,
    status: AbStatus.Pending,
  });
  await trx('single_send_variations').insert([undefined, ...plan.variations].map((v, idx) => variationRow(userId, singleSendId, idx, v)));
}

/** The A/B test of `from`, as a new send's (a duplicate's): its settings and variations, none of its results. */
export async function copyAbTest(trx: Knex.Transaction, userId: number, from: number, to: number): Promise<void> {
  const plan = (await readAbPlans(trx, userId, [from])).get(from);
  if (plan) await saveAbTest(trx, userId, to, plan);
}

/** An `ab_tests` row's settings, as stored (the confidence a numeric, read as text). */
export interface AbSettingsRow {
  type: AbType;
  test_percentage: number;
  duration_minutes: number;
  winner_criteria: AbCriteria;
  confidence: string;
  if_inconclusive: AbIfInconclusive;
}

type TestRow = AbSettingsRow & { single_send_id: number };

interface VariationRow {
  single_send_id: number;
  idx: number;
  subject: string | null;
  template_id: number | null;
  template_html: string | null;
  template_json: string | null;
  sender_id: number | null;
  from_sender: string | null;
  reply_to: string | null;
  sender_name: string | null;
  sender_address: string | null;
}

/** The A/B plans of those of `sendIds` that are A/B sends. */
export async function readAbPlans(db: Knex, userId: number, sendIds: number[]): Promise<Map<number, AbPlan>> {
  if (sendIds.length === 0) return new Map();
  const tests = (await db('ab_tests').where('user_id', userId).whereIn('single_send_id', sendIds).select(
    'single_send_id', 'type', 'test_percentage', 'duration_minutes', 'winner_criteria', 'confidence', 'if_inconclusive',
  )) as TestRow[];
  if (tests.length === 0) return new Map();
  const variations = (await db('single_send_variations')
    .where('user_id', userId)
    .whereIn('single_send_id', tests.map((t) => t.single_send_id))
    .where('idx', '>', 0)
    .orderBy(['single_send_id', 'idx'])
    .select('single_send_id', 'idx', 'subject', 'template_id', 'template_html', 'template_json', 'sender_id', 'from_sender', 'reply_to', 'sender_name', 'sender_address')) as VariationRow[];
  const out = new Map<number, AbPlan>();
  for (const t of tests) {
    out.set(t.single_send_id, {
      settings: {
        type: t.type,
        testPercentage: t.test_percentage,
        durationMinutes: t.duration_minutes,
        winnerCriteria: t.winner_criteria,
        confidence: Number(t.confidence),
        ifInconclusive: t.if_inconclusive,
      },
      variations: variations
        .filter((v) => v.single_send_id === t.single_send_id)
        .map((v) => ({
          subject: v.subject ?? undefined,
          templateId: v.template_id ?? undefined,
          templateHtml: v.template_html,
          templateJson: v.template_json,
          senderId: v.sender_id ?? undefined,
          sender: v.from_sender === null ? undefined : { fromSender: v.from_sender, replyTo: v.reply_to ?? '', senderName: v.sender_name ?? '', senderAddress: v.sender_address ?? '' },
        })),
    });
  }
  return out;
}

/** A variation as the API shows it: the field of the test's type only. */
export function variationFields(type: AbType, v: VariationInput) {
  switch (type) {
    case 'subject':
      return { subject: v.subject ?? '' };
    case 'design':
      return { template_id: v.templateId ?? 0, template_html: v.templateHtml ?? null, template_json: v.templateJson ?? null };
    case 'sender':
      return { sender_id: v.senderId ?? 0 };
  }
}

/** The `ab_*` fields of a send's details and list entry, as create and update take them. */
export function abSettingsFields(plan: AbPlan) {
  const s = plan.settings;
  return {
    ab_test_type: s.type,
    ab_variations: plan.variations.map((v) => variationFields(s.type, v)),
    ab_test_percentage: s.testPercentage,
    ab_duration_minutes: s.durationMinutes,
    ab_winner_criteria: s.winnerCriteria,
    ab_confidence: s.confidence,
    ab_if_inconclusive: s.ifInconclusive,
  };
}
