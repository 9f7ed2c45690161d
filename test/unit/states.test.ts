import {
  AbStatus,
  abStatus,
  AutomationStatus,
  automationStatus,
  DeliveryStatus,
  deliveryStatus,
  dnsRecordStatus,
  groupDisplay,
  JobStatus,
  jobStatus,
  KeyState,
  keyState,
  webhookActivity,
  WebhookBatchStatus,
  webhookBatchStatus,
  ImportStatus,
  importStatus,
  ProgressState,
  progressState,
  SenderVerification,
  senderVerification,
  SendStatus,
  sendStatus,
  sqlValue,
  type Machine,
} from '../../src/states';

type AnyMachine = Machine<string, string | number>;

/** Every pair (from, to) of a machine: what canMove says about it. */
function allowedMoves(m: AnyMachine): string[] {
  const moves: string[] = [];
  for (const from of m.values) for (const to of m.values) if (m.canMove(from, to)) moves.push(`${from} → ${to}`);
  return moves;
}

describe('state machines (src/states.ts)', () => {
  it('keep the values the spec and the API use', () => {
    expect(SendStatus).toEqual({ Draft: 0, Ready: 1, Running: 2, Completed: 3 });
    expect(AutomationStatus).toEqual({ Draft: 0, Live: 1, Paused: 2 });
    expect(SenderVerification).toEqual({ Unverified: 0, Verified: 1 });
    expect(sendStatus.values).toEqual([0, 1, 2, 3]);
    expect(deliveryStatus.values).toEqual(['queued', 'sending', 'sent', 'bounced', 'failed', 'cancelled', 'dropped', 'held']);
    expect(progressState.values).toEqual(['active', 'finished', 'exited', 'skipped']);
    expect(importStatus.values).toEqual(['running', 'completed', 'failed']);
  });

  it('single send: a draft or ready send is made ready by an update; a draft saved as one stays a draft, a ready send not started goes back to one (unschedule); the worker starts and completes it', () => {
    expect(allowedMoves(sendStatus as AnyMachine)).toEqual(['0 → 0', '0 → 1', '1 → 0', '1 → 1', '1 → 2', '2 → 3']);
    // An update once sending has started is refused (NOT_UPDATABLE).
    expect(sendStatus.canMove(SendStatus.Running, SendStatus.Ready)).toBe(false);
    expect(sendStatus.canMove(SendStatus.Completed, SendStatus.Ready)).toBe(false);
    // A started send never goes back to draft, and nothing skips running.
    expect(sendStatus.canMove(SendStatus.Running, SendStatus.Draft)).toBe(false);
    expect(sendStatus.canMove(SendStatus.Ready, SendStatus.Completed)).toBe(false);
  });

  it('automation: set live from draft or paused; only a live one pauses', () => {
    expect(allowedMoves(automationStatus as AnyMachine)).toEqual(['0 → 1', '1 → 2', '2 → 1']);
    expect(automationStatus.canMove(AutomationStatus.Draft, AutomationStatus.Paused)).toBe(false);
    expect(automationStatus.canMove(AutomationStatus.Paused, AutomationStatus.Paused)).toBe(false);
  });

  it('entered contact: active moves on or out; finished, exited and skipped are final', () => {
    expect(allowedMoves(progressState as AnyMachine)).toEqual(['active → active', 'active → finished', 'active → exited']);
    expect(progressState.initial).toEqual([ProgressState.Active, ProgressState.Skipped]);
  });

  it('recipient row: claimed, then an outcome or back to the queue; cancelled only while queued', () => {
    expect(allowedMoves(deliveryStatus as AnyMachine)).toEqual([
      'queued → sending',
      'queued → cancelled',
      'sending → queued',
      'sending → sending',
      'sending → sent',
      'sending → bounced',
      'sending → failed',
      'held → queued',
      'held → sending',
      'held → cancelled',
    ]);
    // A message with the SMTP server already is not cancelled, and an outcome is final.
    expect(deliveryStatus.canMove(DeliveryStatus.Sending, DeliveryStatus.Cancelled)).toBe(false);
    for (const end of [DeliveryStatus.Sent, DeliveryStatus.Bounced, DeliveryStatus.Failed, DeliveryStatus.Cancelled, DeliveryStatus.Dropped]) {
      expect(deliveryStatus.values.filter((to) => deliveryStatus.canMove(end, to))).toEqual([]);
    }
    // A suppressed recipient is written dropped at fan-out and stays so; an A/B send's audience is written held.
    expect(deliveryStatus.initial).toEqual([DeliveryStatus.Queued, DeliveryStatus.Dropped, DeliveryStatus.Held]);
    // A held row is queued (the test group), claimed once its test is decided (the winner's rest), or cancelled with its send;
    // it is never sent, nor failed, without being claimed.
    expect(deliveryStatus.canMove(DeliveryStatus.Held, DeliveryStatus.Queued)).toBe(true);
    expect(deliveryStatus.canMove(DeliveryStatus.Held, DeliveryStatus.Sending)).toBe(true);
    expect(deliveryStatus.canMove(DeliveryStatus.Held, DeliveryStatus.Sent)).toBe(false);
    expect(deliveryStatus.canMove(DeliveryStatus.Held, DeliveryStatus.Failed)).toBe(false);
  });

  it('A/B test: pending until its send starts, testing, then decided — or waiting for a person, who decides', () => {
    expect(allowedMoves(abStatus as AnyMachine)).toEqual(['pending → testing', 'testing → waiting', 'testing → decided', 'waiting → decided']);
    expect(abStatus.initial).toEqual([AbStatus.Pending]);
    expect(abStatus.canMove(AbStatus.Decided, AbStatus.Testing)).toBe(false);
  });

  it('import: running until completed or failed', () => {
    expect(allowedMoves(importStatus as AnyMachine)).toEqual(['running → completed', 'running → failed']);
    expect(importStatus.initial).toEqual([ImportStatus.Running]);
  });

  it('sender: verified by its link, unverified again by a new address', () => {
    expect(allowedMoves(senderVerification as AnyMachine)).toEqual(['0 → 0', '0 → 1', '1 → 0', '1 → 1']);
    expect(senderVerification.initial).toEqual([SenderVerification.Unverified]);
  });

  it('jobs: queued (claimed or waiting for a retry) until done or failed; the same moves under the webhook batches’ words', () => {
    expect(allowedMoves(jobStatus as AnyMachine)).toEqual(['queued → queued', 'queued → done', 'queued → failed']);
    expect(allowedMoves(webhookBatchStatus as AnyMachine)).toEqual(['pending → pending', 'pending → delivered', 'pending → failed']);
    expect(JobStatus).toEqual({ Queued: 'queued', Done: 'done', Failed: 'failed' });
    // GET /webhooks/deliveries has always shown these words.
    expect(WebhookBatchStatus).toEqual({ Queued: 'pending', Done: 'delivered', Failed: 'failed' });
    expect(jobStatus.named).toBe(JobStatus);
  });

  it('webhook activity and group display: set either way by a save', () => {
    expect(allowedMoves(webhookActivity as AnyMachine)).toEqual(['0 → 0', '0 → 1', '1 → 0', '1 → 1']);
    expect(allowedMoves(groupDisplay as AnyMachine)).toEqual(['0 → 0', '0 → 1', '1 → 0', '1 → 1']);
  });

  it('DKIM key: made active or pending; pending is promoted or replaced; retired is final', () => {
    expect(allowedMoves(keyState as AnyMachine)).toEqual(['active → retired', 'pending → active', 'pending → retired']);
    expect(keyState.initial).toEqual([KeyState.Active, KeyState.Pending]);
    // A DNS record's status is whatever the last check found.
    expect(allowedMoves(dnsRecordStatus as AnyMachine)).toHaveLength(16);
    expect(dnsRecordStatus.initial).toEqual(['unchecked']);
  });

  it('every state of every machine can be reached from a state a record is created in', () => {
    const machines = [sendStatus, automationStatus, progressState, deliveryStatus, importStatus, senderVerification, jobStatus, webhookBatchStatus];
    for (const m of [...machines, webhookActivity, groupDisplay, keyState, dnsRecordStatus] as AnyMachine[]) {
      const reached = new Set(m.initial);
      for (let grew = true; grew; ) {
        grew = false;
        for (const from of [...reached]) {
          for (const to of m.values) {
            if (m.canMove(from, to) && !reached.has(to)) {
              reached.add(to);
              grew = true;
            }
          }
        }
      }
      expect({ machine: m.name, unreachable: m.values.filter((v) => !reached.has(v)) }).toEqual({ machine: m.name, unreachable: [] });
    }
  });

  it('move() gives SQL text for a move the table allows and throws for any other', () => {
    expect(deliveryStatus.move([DeliveryStatus.Queued, DeliveryStatus.Sending], DeliveryStatus.Sending)).toEqual({
      from: ['queued', 'sending'],
      to: 'sending',
      fromSql: `'queued', 'sending'`,
      toSql: `'sending'`,
    });
    expect(sendStatus.move(SendStatus.Running, SendStatus.Completed)).toMatchObject({ fromSql: '2', toSql: '3' });
    expect(() => sendStatus.move(SendStatus.Completed, SendStatus.Running)).toThrow('single send status: no move from 3 to 2');
    expect(() => deliveryStatus.move([DeliveryStatus.Queued, DeliveryStatus.Sent], DeliveryStatus.Sending)).toThrow(
      'delivery status: no move from sent to sending',
    );
  });

  it('names each state as SQL text, refusing anything that is not a plain word or integer', () => {
    expect(deliveryStatus.sql.Cancelled).toBe(`'cancelled'`);
    expect(automationStatus.sql.Live).toBe('1');
    expect(() => sqlValue(`x'; DROP TABLE deliveries; --`)).toThrow();
    expect(() => sqlValue(1.5)).toThrow();
  });
});
