/**
 * The only place response bodies are shaped (with error-handler.ts). Every quirk of the
 * spec's envelope is a named function here, never a literal in a router.
 */
export type Envelope =
  | { status: 'success'; message: unknown }
  | { status: 'success'; errors: string }
  | { status: 'failed'; errors: unknown };

/** Success: `message` holds an object keyed by resource, or a confirmation string. */
export function ok(message: unknown): Envelope {
  return { status: 'success', message };
}

/**
 * Spec rule 3: segment, contact type and sender deletes answer success with the
 * confirmation in `errors` instead of `message`.
 */
export function okInErrors(text: string): Envelope {
  return { status: 'success', errors: text };
}

export function failed(errors: unknown): Envelope {
  return { status: 'failed', errors };
}

/** NF1 and NF2 differ only in the case of one letter; both are in the spec. */
export const NOT_FOUND_1 = 'Record Not Found';
export const NOT_FOUND_2 = 'Record not found';

export const messages = {
  added: 'Added Successfully',
  saved: 'Saved Successfully',
  updated: 'Updated Successfully',
  deleted: 'Deleted Successfully',
  contactAdded: 'Contact Added Successfully',
  contactUpdated: 'Contact Updated Successfully',
  imported: 'Imported Successfully',
  duplicated: 'Duplicated Successfully',
  scheduleAdded: 'Schedule Added',
  automationLive: 'Automation has been set live',
  automationPaused: 'Automation Paused Successfully',
  verificationSent: 'Verification Mail Send',
  winnerSelected: 'Winner Selected Successfully',
} as const;
