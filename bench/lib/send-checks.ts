import { simpleParser } from 'mailparser';
import { procStatus } from './sample';
import { expectedFirstName } from './send-fixture';

/**
 * What the send benchmarks check besides speed: sampled messages as the sink received them
 * are the right message for their recipient (subject with the recipient's own first name,
 * HTML and text with every placeholder filled, one token in Message-ID, pixel and
 * List-Unsubscribe), and the sender's memory over a whole phase.
 */
export async function checkSamples(samples: string[], publicUrl: string) {
  const problems: string[] = [];
  for (const raw of samples) {
    const m = await simpleParser(raw);
    const to = m.to && !Array.isArray(m.to) ? (m.to.value[0].address ?? '') : '';
    const first = expectedFirstName(to);
    const header = (name: string) => {
      const line = m.headerLines.find((h) => h.key === name)?.line ?? '';
      return line.slice(line.indexOf(':') + 1).trim();
    };
    const token = /^<([0-9a-f]{56})@bench-news\.test>$/.exec(header('message-id'))?.[1];
    if (!first) problems.push(`${to}: not a benchmark address`);
    if (m.subject !== `The November issue, ${first}`) problems.push(`${to}: subject ${m.subject}`);
    if (typeof m.html !== 'string' || m.html.includes('((') || !m.html.includes(`Hi ${first}, here is what happened this month`)) {
      problems.push(`${to}: HTML not rendered for this recipient`);
    }
    if (!m.text || m.text.includes('((')) problems.push(`${to}: no text part, or placeholders left in it`);
    if (!token) problems.push(`${to}: Message-ID ${header('message-id')}`);
    else {
      if (header('list-unsubscribe') !== `<${publicUrl}/unsubscribe/${token}>`) problems.push(`${to}: List-Unsubscribe ${header('list-unsubscribe')}`);
      if (typeof m.html === 'string' && !m.html.includes(`${publicUrl}/t/open/${token}.gif`)) problems.push(`${to}: no pixel with the message's token`);
    }
  }
  return { checked: samples.length, problems, rawBytes: samples.map((s) => s.length) };
}

const mb = (kb: number) => Math.round((kb / 1024) * 10) / 10;

/** A process's RSS every `everyMs`: peak (sampled, and the kernel's VmHWM), a timeline of one point per second. */
export function rssSampler(pid: number, label: () => string, everyMs = 100) {
  let peakKb = 0;
  let samples = 0;
  const t0 = Date.now();
  const timeline: Array<{ s: number; rssMb: number; phase: string }> = [];
  let lastPoint = -Infinity;
  const timer = setInterval(() => {
    try {
      const rss = procStatus(pid).VmRSS ?? 0;
      samples += 1;
      peakKb = Math.max(peakKb, rss);
      const now = Date.now();
      if (now - lastPoint >= 1000) {
        lastPoint = now;
        timeline.push({ s: Math.round((now - t0) / 100) / 10, rssMb: mb(rss), phase: label() });
      }
    } catch {
      // the process is gone
    }
  }, everyMs);
  return {
    /** The RSS right now, in MB (0 once the process is gone). */
    current(): number {
      try {
        return mb(procStatus(pid).VmRSS ?? 0);
      } catch {
        return 0;
      }
    },
    stop() {
      clearInterval(timer);
      let hwm = 0;
      try {
        hwm = procStatus(pid).VmHWM ?? 0;
      } catch {
        // gone
      }
      return { peakSampledMb: mb(peakKb), vmHwmMb: mb(hwm), samples, timeline };
    },
  };
}
