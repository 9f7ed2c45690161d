/** What Herald records (docs/decisions.md, "Events"); the `events` table's CHECK lists the same names. */
export const MESSAGE_EVENT_TYPES = [
  'delivered',
  'deferred',
  'bounced',
  'dropped',
  'opened',
  'clicked',
  'unsubscribed',
  'complained',
] as const;
export const ACCOUNT_EVENT_TYPES = [
  'single_send.started',
  'single_send.completed',
  'automation.live',
  'automation.paused',
  'contacts.imported',
  'sender.verified',
  'webhook.disabled',
] as const;
export const EVENT_TYPES = [...MESSAGE_EVENT_TYPES, ...ACCOUNT_EVENT_TYPES] as const;

export type AccountEventType = (typeof ACCOUNT_EVENT_TYPES)[number];

/** Why a recipient was not sent a message (a `dropped` event's `data.reason`). */
export type DropReason = 'unsubscribed' | 'group_unsubscribed' | 'bounced' | 'complained';

/** The message an event is about: its account, recipient row, send or automation, and address. */
export interface MessageRef {
  userId: number;
  deliveryId: number | null;
  singleSendId: number | null;
  automationId: number | null;
  email: string;
}

/** One fact about a message, with the data its type carries. */
export type MessageEvent = MessageRef &
  (
    | { type: 'delivered'; data?: undefined }
    | { type: 'deferred'; data: { status: number | null; diagnostic: string } }
    | { type: 'bounced'; data: { kind: 'hard' | 'soft'; status: number | null; diagnostic: string } }
    | { type: 'dropped'; data: { reason: DropReason } }
    | { type: 'opened'; data?: undefined }
    | { type: 'clicked'; data: { url: string; suspected_bot: boolean } }
    | { type: 'unsubscribed'; data: { group_id: number | null } }
    | { type: 'complained'; data?: undefined }
  );
