/**
 * The fault tests' SMTP sink, run as a child process (`node --import tsx sink-child.ts N`) so
 * that receiving 10,000 messages does not run on the test’s event loop (which must notice "30 %
 * received" and kill a worker at that moment) and does not stall the jest worker. It listens
 * on N ports (one per Herald worker when the test must tell workers apart), accepts every
 * message, and reports each accepted recipient to the parent over IPC in small batches:
 *
 *   ← { type: 'ready', ports: number[] }
 *   ← { type: 'got', items: Array<[address, listenerIndex, acceptedAtMs]> }   every ≤ 20 ms
 *   → { type: 'sync', id }      ← { type: 'synced', id } after every earlier 'got'
 *   → { type: 'delay', ms, after }   accept `after` more messages at once, then wait `ms`
 *                                    before answering each DATA (holds a worker mid-batch)
 *
 * "Accepted" means the moment the sink answers 250 to the message's DATA, i.e. when Herald's
 * worker may consider it delivered. A message whose connection closed while it was held (its
 * sender was killed) is not accepted: the client never saw the 250. Each listener is the tests'
 * one SMTP sink (test/helpers/smtp.ts), keeping no message text.
 */
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp';

type Item = [string, number, number];

async function main(): Promise<void> {
  const listeners = Math.max(1, Number(process.argv[2] ?? 1));
  let delayMs = Number(process.argv[3] ?? 0);
  /** Messages accepted so far, and from which count on `delayMs` applies. */
  let total = 0;
  let delayFrom = 0;
  let pending: Item[] = [];
  let flushTimer: NodeJS.Timeout | undefined;

  const flush = () => {
    flushTimer = undefined;
    if (pending.length === 0) return;
    const items = pending;
    pending = [];
    process.send!({ type: 'got', items });
  };

  const held = () => new Promise<'accept'>((resolve) => setTimeout(() => resolve('accept'), delayMs));
  const sinks: SmtpSink[] = [];
  for (let index = 0; index < listeners; index++) {
    sinks.push(
      await startSmtpSink({
        keepMessages: false,
        data: () => (delayMs > 0 && total >= delayFrom ? held() : 'accept'),
        onAccepted(to, at) {
          total += 1;
          for (const address of to) pending.push([address, index, at]);
          flushTimer ??= setTimeout(flush, 20);
        },
      }),
    );
  }

  process.on('message', (msg: { type: string; id?: number; ms?: number; after?: number }) => {
    if (msg.type === 'sync') {
      if (flushTimer) clearTimeout(flushTimer);
      flush();
      process.send!({ type: 'synced', id: msg.id });
    } else if (msg.type === 'delay') {
      delayMs = msg.ms ?? 0;
      delayFrom = total + (msg.after ?? 0);
      process.send!({ type: 'delayed', id: msg.id });
    }
  });
  // The test process went away (crashed, killed): do not linger.
  process.on('disconnect', () => process.exit(0));
  process.send!({ type: 'ready', ports: sinks.map((s) => s.port) });
}

void main();
