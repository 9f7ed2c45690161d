/**
 * The settings of an A/B test of a single send (docs/decisions.md, "A/B tests"), as the API takes
 * them and `ab_tests` keeps them (its CHECK constraints list the same values).
 */
export const AB_TYPES = ['subject', 'design', 'sender'] as const;
export type AbType = (typeof AB_TYPES)[number];

export const AB_CRITERIA = ['open', 'click', 'manual'] as const;
export type AbCriteria = (typeof AB_CRITERIA)[number];

export const AB_IF_INCONCLUSIVE = ['send_leader', 'send_original', 'wait'] as const;
export type AbIfInconclusive = (typeof AB_IF_INCONCLUSIVE)[number];

export const AB_DEFAULTS = {
  testPercentage: 20,
  durationMinutes: 240,
  winnerCriteria: 'click',
  confidence: 0.95,
  ifInconclusive: 'send_leader',
} as const satisfies { testPercentage: number; durationMinutes: number; winnerCriteria: AbCriteria; confidence: number; ifInconclusive: AbIfInconclusive };

/** An A/B test's settings, resolved (defaults applied). */
export interface AbSettings {
  type: AbType;
  testPercentage: number;
  durationMinutes: number;
  winnerCriteria: AbCriteria;
  confidence: number;
  ifInconclusive: AbIfInconclusive;
}

/** One variation of B–F as saved: the field of the test's type (a sender's fields copied when it was saved). */
export interface VariationInput {
  subject?: string;
  templateId?: number;
  templateHtml?: string | null;
  templateJson?: string | null;
  senderId?: number;
  sender?: { fromSender: string; replyTo: string; senderName: string; senderAddress: string };
}

/** The letter of a variation's index, as people name them (A is the send itself). */
export function variationLetter(index: number): string {
  return String.fromCharCode(65 + index);
}
