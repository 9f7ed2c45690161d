/**
 * Herald's state machines, each named once: the values the database stores (and the API
 * returns, as the spec has them) and the moves allowed between them.
 *
 * - The database refuses any other value (CHECK constraints: migrations/202611270100_status-checks.ts,
 *   202612030110_state-checks.ts and the migrations that made the tables; test/api/status-checks.test.ts
 *   fails on a status-like column without one).
 * - A service that moves one record asks `canMove(from, to)` and refuses the request otherwise.
 * - SQL that moves many rows at once takes its ends from `move(from, to)`, which throws when the
 *   module loads if the table below does not allow that move; other SQL names a state through
 *   `.sql` (the value as SQL text). Both are constants of this file, never input.
 *
 * This module imports nothing, so any layer may use it.
 */

type ValueOf<T> = T[keyof T];
type StateValue = string | number;

/** A move written in SQL: its ends as values and as SQL text (`'queued', 'sending'`, `2`). */
export interface Move<S extends StateValue> {
  readonly from: readonly S[];
  readonly to: S;
  readonly fromSql: string;
  readonly toSql: string;
}

export interface Machine<K extends string, S extends StateValue> {
  readonly name: string;
  /** Each state's value by its name (the map the machine was made from). */
  readonly named: Readonly<Record<K, S>>;
  /** Every value, as the CHECK constraint lists them. */
  readonly values: readonly S[];
  /** The values a record is created with. */
  readonly initial: readonly S[];
  /** Each state as SQL text, for statements that name one. */
  readonly sql: Readonly<Record<K, string>>;
  canMove(from: S, to: S): boolean;
  move(from: S | readonly S[], to: S): Move<S>;
}

/** A state constant as SQL text: an integer as it is, a word quoted. */
export function sqlValue(v: StateValue): string {
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new Error(`state ${v} is not an integer`);
    return String(v);
  }
  if (!/^[a-z_]+$/.test(v)) throw new Error(`state ${JSON.stringify(v)} is not a plain word`);
  return `'${v}'`;
}

function machine<K extends string, S extends StateValue>(
  name: string,
  named: Readonly<Record<K, S>>,
  table: { initial: readonly K[]; moves: Readonly<Record<K, readonly K[]>> },
): Machine<K, S> {
  const keys = Object.keys(named) as K[];
  const moves = new Map<S, S[]>(keys.map((k) => [named[k], table.moves[k].map((to) => named[to])]));
  const canMove = (from: S, to: S) => moves.get(from)?.includes(to) ?? false;
  return {
    name,
    named,
    values: keys.map((k) => named[k]),
    initial: table.initial.map((k) => named[k]),
    sql: Object.fromEntries(keys.map((k) => [k, sqlValue(named[k])])) as Record<K, string>,
    canMove,
    move(from, to) {
      const sources: readonly S[] = Array.isArray(from) ? from : [from as S];
      for (const s of sources) {
        if (!canMove(s, to)) throw new Error(`${name}: no move from ${String(s)} to ${String(to)}`);
      }
      return { from: sources, to, fromSql: sources.map(sqlValue).join(', '), toSql: sqlValue(to) };
    },
  };
}

// ── single_sends.status ─────────────────────────────────────────────────────────────────────
// Spec: 0 initiate, 1 ready to send, 2 running, 3 completed.

export const SendStatus = { Draft: 0, Ready: 1, Running: 2, Completed: 3 } as const;
export type SendStatus = ValueOf<typeof SendStatus>;

/**
 * Created ready, or as a draft (draft=1, or a copy). An update or a schedule makes a draft or a
 * ready send ready (again); unscheduling (or saving with draft=1) takes a ready send that has not
 * started back to a draft; the worker starts a ready send at its time and completes it once every
 * recipient row has an outcome. Deleting is a soft delete and leaves the status as it was.
 */
export const sendStatus = machine('single send status', SendStatus, {
  initial: ['Ready', 'Draft'],
  moves: { Draft: ['Draft', 'Ready'], Ready: ['Draft', 'Ready', 'Running'], Running: ['Completed'], Completed: [] },
});

// ── automations.status ──────────────────────────────────────────────────────────────────────
// Spec: 0 draft, 1 live; paused (the spec shows no value) is 2.

export const AutomationStatus = { Draft: 0, Live: 1, Paused: 2 } as const;
export type AutomationStatus = ValueOf<typeof AutomationStatus>;

/** A draft or paused automation is set live (setting a live one live changes nothing); only a live one pauses. */
export const automationStatus = machine('automation status', AutomationStatus, {
  initial: ['Draft'],
  moves: { Draft: ['Live'], Live: ['Paused'], Paused: ['Live'] },
});

// ── automation_contacts.state: an entered contact's progress ────────────────────────────────

export const ProgressState = { Active: 'active', Finished: 'finished', Exited: 'exited', Skipped: 'skipped' } as const;
export type ProgressState = ValueOf<typeof ProgressState>;

/**
 * Active while an email is due (active → active: on to the next email); finished after the
 * last; exited when unsubscribed, deleted, removed from the target, or its automation deleted.
 * Skipped: a welcome automation's members at its first go-live, who never enter.
 */
export const progressState = machine('automation progress state', ProgressState, {
  initial: ['Active', 'Skipped'],
  moves: { Active: ['Active', 'Finished', 'Exited'], Finished: [], Exited: [], Skipped: [] },
});

// ── deliveries.status: a recipient row (docs/CONTEXT.md) ────────────────────────────────────

export const DeliveryStatus = {
  Queued: 'queued',
  Sending: 'sending',
  Sent: 'sent',
  Bounced: 'bounced',
  Failed: 'failed',
  Cancelled: 'cancelled',
  Dropped: 'dropped',
  Held: 'held',
} as const;
export type DeliveryStatus = ValueOf<typeof DeliveryStatus>;

/**
 * Queued → sending when a worker claims the row (sending → sending when another worker takes
 * an expired lease over); sending → sent, bounced (refused permanently), failed (after the
 * last retry), or queued again (a retry later, or a claim a stopping worker gives back). A
 * queued row of a deleted send or automation is cancelled. A recipient the suppression rule
 * refuses at fan-out is written dropped and never moves (src/suppression). A recipient of an
 * A/B send is written held: the test group's rows are queued once the audience is complete; the
 * rest is claimed straight from held (→ sending, with the winner's variation) once the winner is
 * decided (src/ab/decision.ts, src/deliveries/queue.ts), or cancelled with their send.
 */
export const deliveryStatus = machine('delivery status', DeliveryStatus, {
  initial: ['Queued', 'Dropped', 'Held'],
  moves: {
    Held: ['Queued', 'Sending', 'Cancelled'],
    Queued: ['Sending', 'Cancelled'],
    Sending: ['Sending', 'Sent', 'Bounced', 'Failed', 'Queued'],
    Sent: [],
    Bounced: [],
    Failed: [],
    Cancelled: [],
    Dropped: [],
  },
});

// ── ab_tests.status: an A/B test of a single send (docs/decisions.md, "A/B tests") ──────────

export const AbStatus = { Pending: 'pending', Testing: 'testing', Waiting: 'waiting', Decided: 'decided' } as const;
export type AbStatus = ValueOf<typeof AbStatus>;

/**
 * Pending until its send starts; testing once the audience is written and the test group
 * queued; then decided (a winner, by the evidence, by the inconclusive rule or by a person), or
 * waiting for a person (manual criteria, or an inconclusive test told to wait), who decides. The
 * API reports a decided test whose send has completed as `completed` (derived, not stored).
 */
export const abStatus = machine('A/B test status', AbStatus, {
  initial: ['Pending'],
  moves: { Pending: ['Testing'], Testing: ['Waiting', 'Decided'], Waiting: ['Decided'], Decided: [] },
});

/** deliveries.ab_phase: a recipient row of an A/B send is in its test group, or in the rest sent the winner. */
export const AbPhase = { Test: 1, Winner: 2 } as const;
export type AbPhase = ValueOf<typeof AbPhase>;

// ── contact_imports.status ──────────────────────────────────────────────────────────────────

export const ImportStatus = { Running: 'running', Completed: 'completed', Failed: 'failed' } as const;
export type ImportStatus = ValueOf<typeof ImportStatus>;

export const importStatus = machine('import status', ImportStatus, {
  initial: ['Running'],
  moves: { Running: ['Completed', 'Failed'], Completed: [], Failed: [] },
});

// ── senders.is_verified ─────────────────────────────────────────────────────────────────────
// Spec: 0 not verified, 1 verified.

export const SenderVerification = { Unverified: 0, Verified: 1 } as const;
export type SenderVerification = ValueOf<typeof SenderVerification>;

/**
 * Created unverified; opening the current verification link verifies it (again, if it is
 * opened twice before it is used up); a new from_email makes it unverified, whatever it was.
 */
export const senderVerification = machine('sender verification', SenderVerification, {
  initial: ['Unverified'],
  moves: { Unverified: ['Verified', 'Unverified'], Verified: ['Verified', 'Unverified'] },
});

// ── Background jobs: jobs.status, outbox_jobs.status, webhook_deliveries.status ────────────

/** The names every job table's states have, so one runner (src/jobs) moves them all. */
export type JobStateName = 'Queued' | 'Done' | 'Failed';

/**
 * Queued while a job waits, and while it is claimed: a claim is a lease (the row's
 * next_attempt_at moved to the lease's end) and an attempt number, not a state. Then done;
 * failed (a permanent failure, or the kind's last attempt failed); or queued again for a
 * retry. A job whose subject goes away is failed at once (a webhook deleted).
 */
const JOB_MOVES = {
  initial: ['Queued'],
  moves: { Queued: ['Queued', 'Done', 'Failed'], Done: [], Failed: [] },
} as const satisfies { initial: readonly JobStateName[]; moves: Record<JobStateName, readonly JobStateName[]> };

/** jobs.status and outbox_jobs.status. */
export const JobStatus = { Queued: 'queued', Done: 'done', Failed: 'failed' } as const;
export type JobStatus = ValueOf<typeof JobStatus>;
export const jobStatus = machine('job status', JobStatus, JOB_MOVES);

/**
 * webhook_deliveries.status: a webhook batch is a job under the words GET /webhooks/deliveries
 * has always shown (pending, delivered, failed).
 */
export const WebhookBatchStatus = { Queued: 'pending', Done: 'delivered', Failed: 'failed' } as const;
export type WebhookBatchStatus = ValueOf<typeof WebhookBatchStatus>;
export const webhookBatchStatus = machine('webhook batch status', WebhookBatchStatus, JOB_MOVES);

// ── webhooks.is_active ──────────────────────────────────────────────────────────────────────

export const WebhookActivity = { Inactive: 0, Active: 1 } as const;
export type WebhookActivity = ValueOf<typeof WebhookActivity>;

/**
 * Created active (or paused, when the request says so). A save sets either; the worker moves
 * an active endpoint that has failed for WEBHOOK_DISABLE_AFTER_HOURS to inactive.
 */
export const webhookActivity = machine('webhook activity', WebhookActivity, {
  initial: ['Active', 'Inactive'],
  moves: { Active: ['Active', 'Inactive'], Inactive: ['Inactive', 'Active'] },
});

// ── unsubscribe_groups.is_display ───────────────────────────────────────────────────────────
// Spec: 1 shown on the unsubscribe preferences page, 0 not shown there.

export const GroupDisplay = { Hidden: 0, Shown: 1 } as const;
export type GroupDisplay = ValueOf<typeof GroupDisplay>;

/** Set by each save, either way. */
export const groupDisplay = machine('unsubscribe group display', GroupDisplay, {
  initial: ['Shown', 'Hidden'],
  moves: { Shown: ['Shown', 'Hidden'], Hidden: ['Hidden', 'Shown'] },
});

// ── dkim_keys.state and dns_status ──────────────────────────────────────────────────────────

export const KeyState = { Active: 'active', Pending: 'pending', Retired: 'retired' } as const;
export type KeyState = ValueOf<typeof KeyState>;

/**
 * A domain's first key is made active; a rotation makes a pending one. A pending key whose
 * record is found published becomes active and the active one is retired; a rotation while
 * one is pending retires the pending one. Retired keys stay (their selectors are never reused).
 */
export const keyState = machine('DKIM key state', KeyState, {
  initial: ['Active', 'Pending'],
  moves: { Active: ['Retired'], Pending: ['Active', 'Retired'], Retired: [] },
});

export const DnsRecordStatus = { Verified: 'verified', Missing: 'missing', Mismatch: 'mismatch', Unchecked: 'unchecked' } as const;
export type DnsRecordStatus = ValueOf<typeof DnsRecordStatus>;

/** A DNS record's last check: unchecked until one ran (or when the lookup failed); each check replaces it. */
export const dnsRecordStatus = machine('DNS record status', DnsRecordStatus, {
  initial: ['Unchecked'],
  moves: {
    Verified: ['Verified', 'Missing', 'Mismatch', 'Unchecked'],
    Missing: ['Verified', 'Missing', 'Mismatch', 'Unchecked'],
    Mismatch: ['Verified', 'Missing', 'Mismatch', 'Unchecked'],
    Unchecked: ['Verified', 'Missing', 'Mismatch', 'Unchecked'],
  },
});

// ── Fixed kinds: chosen when a record is made, never moved ──────────────────────────────────

/** single_sends.schedule_type (spec): 0 sent immediately, 1 at the given date and time. */
export const ScheduleType = { Now: 0, At: 1 } as const;
export type ScheduleType = ValueOf<typeof ScheduleType>;

/** automations.automation_type: the API's `type` welcome → 1, custom → 2. */
export const AutomationType = { Welcome: 1, Custom: 2 } as const;
export type AutomationType = ValueOf<typeof AutomationType>;

/** automations.exit_criteria: 0 leave on unsubscribe only, 1 also when removed from the target. */
export const ExitCriteria = { OnUnsubscribe: 0, OnRemoval: 1 } as const;
export type ExitCriteria = ValueOf<typeof ExitCriteria>;

/** templates.is_blank (a built-in template, written by the seeds): 1 the blank canvas, 0 a designed one. */
export const TemplateBlank = { Designed: 0, Blank: 1 } as const;
export type TemplateBlank = ValueOf<typeof TemplateBlank>;
