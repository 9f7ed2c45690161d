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
 * sender was killed) is not accepted: the client never saw the 250.
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';

type Item = [string, number, number];

function main(): void {
  const listeners = Math.max(1, Number(process.argv[2] ?? 1));
  let delayMs = Number(process.argv[3] ?? 0);
  /** Messages accepted so far, and from which count on `delayMs` applies. */
  let total = 0;
  let delayFrom = 0;
  const closed = new Set<string>();
  let pending: Item[] = [];
  let flushTimer: NodeJS.Timeout | undefined;

  const flush = () => {
    flushTimer = undefined;
    if (pending.length === 0) return;
    const items = pending;
    pending = [];
    process.send!({ type: 'got', items });
  };

  const servers = Array.from({ length: listeners }, (_, index) => {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      disableReverseLookup: true,
      logger: false,
      maxClients: 1000,
      onClose(session) {
        closed.add(session.id);
      },
      onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
        stream.on('data', () => undefined);
        stream.on('end', () => {
          const accept = () => {
            if (closed.has(session.id)) return; // the sender is gone: nobody to answer 250 to
            total += 1;
            const now = Date.now();
            for (const r of session.envelope.rcptTo) pending.push([r.address.toLowerCase(), index, now]);
            flushTimer ??= setTimeout(flush, 20);
            callback();
          };
          if (delayMs > 0 && total >= delayFrom) setTimeout(accept, delayMs);
          else accept();
        });
      },
    });
    server.on('error', (err) => process.stderr.write(`sink ${index}: ${err.message}\n`));
    return server;
  });

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

  void Promise.all(
    servers.map(
      (s) =>
        new Promise<number>((resolve) =>
          s.listen(0, '127.0.0.1', () => {
            const address = s.server.address();
            resolve(typeof address === 'object' && address ? address.port : 0);
          }),
        ),
    ),
  ).then((ports) => process.send!({ type: 'ready', ports }));
}

main();
