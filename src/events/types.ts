import type { SourceRef } from '../sources';

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
  'single_send.ab_decided',
  'automation.live',
  'automation.paused',
  'contacts.imported',
  'sender.verified',
  'webhook.disabled',
  'contact.confirmed',
  'contact.data_requested',
  'contact.erased',
  'route.blocked',
] as const;
export const EVENT_TYPES = [...MESSAGE_EVENT_TYPES, ...ACCOUNT_EVENT_TYPES] as const;

export type AccountEventType = (typeof ACCOUNT_EVENT_TYPES)[number];

/** Why a recipient was not sent a message (a `dropped` event's `data.reason`). */
export type DropReason = 'unsubscribed' | 'group_unsubscribed' | 'bounced' | 'complained' | 'suppressed';

/** The message an event is about: its account, recipient row, owner (send or automation: src/sources), and address. */
export interface MessageRef extends SourceRef {
  userId: number;
  deliveryId: number | null;
  email: string;
}

/** What a failed delivery attempt or a bounce report says. */
export interface BounceData {
  status: string | null;
  diagnostic: string;
  source: string;
  smtp_code?: number | null;
  /** The delivery route the message was tried on (issue 36; Herald's own sends). */
  route?: string;
  /** A deferral by the routes: why it waits (no route with room, throttled, blocked, down: src/mail/mailer.ts DeferReason). */
  reason?: string;
}

/** One fact about a message, with the data its type carries. */
export type MessageEvent = MessageRef &
  (
    | { type: 'delivered'; data?: { route: string } }
    // `status`: the enhanced status ('5.1.1') or null when the answer has none; `source` says where the
    // answer came from: `smtp` (Herald's own send, which adds the reply code as `smtp_code`), or a report
    // received later (`dsn`, `arf`, `imap`, an ESP: src/bounces/apply.ts).
    | { type: 'deferred'; data: BounceData }
    | { type: 'bounced'; data: BounceData & { kind: 'hard' | 'soft' } }
    | { type: 'dropped'; data: { reason: DropReason } }
    | { type: 'opened'; data?: { via: 'click' } }
    /** `linkId`: the tracked_links row (not stored in the event; the statistics count per link). */
    | { type: 'clicked'; linkId: number; data: { url: string; suspected_bot: boolean } }
    | { type: 'unsubscribed'; data: { group_id: number | null } }
    | { type: 'complained'; data?: { source: string; feedback_type?: string } }
  );
