import { addressesIn, inferStatus, lines, squeeze } from './fields';

/**
 * Bounces without a machine-readable part: qmail and Yahoo (`<addr>:` paragraphs), Exim (the
 * indented list after "The following address(es) failed:"), old Sendmail (the "permanent fatal
 * errors" list and its transcript), old Postfix, Gmail's and Microsoft's texts when their
 * delivery-status part is missing or empty. Everything here reads the report's own text, before
 * the copy of the returned message (`ownText`), so the returned message's words never count.
 */

export interface PlainRecipient {
  email: string;
  diagnostic: string;
}

/** Where the copy of the returned message starts in a plain-text bounce. */
const RETURNED_MARKERS: RegExp[] = [
  /^[ \t]*-{2,}[ \t]*Below this line is a copy of the message/im, // qmail, Yahoo
  /^[ \t]*-{2,}[ \t]*This is a copy of the message/im, // Exim
  /^[ \t]*-{2,}[ \t]*(?:The )?(?:header|headers) of the original message/im,
  /^[ \t]*-{2,}[ \t]*(?:Original message|Unsent message|Returned message|Undelivered message|Message header|Original message header)s?\b[^\n]*-*[ \t]*$/im,
  /^[ \t]*Original message headers:/im, // Exchange, Microsoft 365
  /^[ \t]*(?:Original|Returned|Unsent|Undelivered) message (?:follows|headers? follows?)\b/im,
  /^[ \t]*Message headers follow/im,
  /^[ \t]*-{2,}[ \t]*Forwarded message/im,
];

/** The index where the copy of the returned message starts, or -1. */
export function returnedStart(text: string): number {
  let best = -1;
  for (const marker of RETURNED_MARKERS) {
    const m = marker.exec(text);
    if (m && (best === -1 || m.index < best)) best = m.index;
  }
  return best;
}

/** The report's own words: the text before the copy of the returned message. */
export function ownText(text: string): string {
  const at = returnedStart(text);
  return at === -1 ? text : text.slice(0, at);
}

/** The text after the marker line of the returned copy ('' when there is none). */
export function returnedText(text: string): string {
  const at = returnedStart(text);
  if (at === -1) return '';
  const nl = text.indexOf('\n', at);
  return nl === -1 ? '' : text.slice(nl + 1);
}

const INDENT = (line: string) => /^[ \t]*/.exec(line)![0].replace(/\t/g, '    ').length;
const BLANK = (line: string | undefined) => line === undefined || line.trim() === '';

/** Lines that introduce a list of failed (or delayed) addresses. */
const LIST_INTRO =
  /(not|n't) (be )?(delivered|reach(ed)?)( to)?:\s*$|(following|these) (list of )?(e-?mail )?(address(es|\(es\))?|recipients?(\(s\))?|users?|destinations?)( or (groups|distribution lists|[\w.]+ lists))?\b[^\n]{0,80}[:.]?\s*$|address(es|\(es\))? failed:|has not yet been delivered[^\n]*:\s*$|one or more (of its )?recipients\b[^\n]*$|not yet been delivered is:\s*$|failed permanently:\s*$|has been delayed:\s*$/i;

/** A line that is only an address (indented, in angle brackets, `addr<mailto:addr>`, `addr (addr)`, with a trailing colon or `...`). */
const ADDRESS_LINE = /^[ \t]*(?:"[^"]*"[ \t]*)?<?([^\s<>"():;,@]+@[^\s<>"():;,@]+?)>?(?:<mailto:[^>]*>|[ \t]*\([^)]*\))?[ \t]*(?::|\.\.\.[^\n]*|[ \t]+<[^>]*>)?[ \t]*$/;

/** In a list after an introducing line: a line that starts with an address (`addr on <date>`, `addr (reason)`). */
const LIST_ENTRY = /^[ \t]*<?([^\s<>"():;,@]+@[^\s<>"():;,@]+?)>?(?:[ \t:,]|$)/;

/** A qmail/Yahoo/Postfix paragraph head: `<addr>:` and perhaps the explanation's first words. */
const ANGLE_HEAD = /^(?:<([^\s<>"@]+@[^\s<>"@]+)>|"([^\s<>"@]+@[^\s<>"@]+)"):?(.*)$/;

/** A Sendmail transcript line: `550 5.1.1 <addr>... User unknown`, `<<< 550 <addr>... User unknown`. */
const TRANSCRIPT_LINE = /^[ \t]*(?:<<<[ \t]*)?([45]\d\d)[ -](?:[45]\.\d{1,3}\.\d{1,3}[ \t]+)?<([^\s<>@]+@[^\s<>@]+)>\.\.\.(.*)$/;

/** A line that carries an SMTP answer: an enhanced code, or a reply code where answers start. */
const CODE_LINE = /(?<![\d.])[45]\.\d{1,3}\.\d{1,3}(?![\d.])|(?:^|[\s:'"#(<])[45][0-5]\d[ -][A-Za-z<(]/;

/** Lines that say what the remote server answered. */
const DIAGNOSTIC_LINES: RegExp[] = [
  /Remote Server returned '([^']+)'?/i,
  /^[ \t]*#?((?:[45]\d\d)[ -][^\n]*)$/,
  /^[ \t]*<<<[ \t]*([45]\d\d[ -][^\n]*)$/,
  /(?:remote (?:host|server) said|said|reason|error was|response was|returned was|the response from the remote server was|the error that the other server returned was)[ \t]*:[ \t]*([^\n]+)$/i,
];

/** What a list line says after its address (`addr: Domain does not exist`, `<addr>... User unknown`). */
function restAfter(line: string, email: string): string {
  const at = line.toLowerCase().indexOf(email);
  if (at === -1) return '';
  return line
    .slice(at + email.length)
    .replace(/^[>"')\s]*(?:<mailto:[^>]*>)?/, '')
    .replace(/^(?:\.\.\.|[:,])\s*/, '')
    .trim();
}

/** The explanation that follows an address's line: its own rest and its indented (or paragraph) lines. */
function followingBlock(all: string[], i: number, rest: string, paragraph: boolean): string {
  const parts = rest.trim() ? [rest.trim()] : [];
  const base = INDENT(all[i]);
  for (let j = i + 1; j < all.length && j <= i + 12; j++) {
    const line = all[j];
    if (BLANK(line)) break;
    if (!paragraph && INDENT(line) <= base) break;
    if (!paragraph && ADDRESS_LINE.test(line)) break;
    if (paragraph && ANGLE_HEAD.test(line)) break;
    parts.push(line.trim());
  }
  return parts.join(' ');
}

/** Delivery-status fields written into a text (never an explanation by themselves). */
const DSN_FIELD_LINE = /^[ \t]*(?:Status|Action|Final-Recipient|Original-Recipient|X-Actual-Recipient|Reporting-MTA|Remote-MTA|Received-From-MTA|Arrival-Date|Last-Attempt-Date|Will-Retry-Until)[ \t]*:/i;

/** Lines that end by announcing the answer on the lines below. */
const ANSWER_INTRO =
  /(response|error)( from the remote server| that the other server returned)? was:\s*$|remote (host|server) said:\s*$|technical details of (permanent|temporary) failure:\s*$|^\s*reason:\s*$/i;

/** The most recipients one report yields; Herald mails one recipient per message. */
export const MAX_RECIPIENTS = 100;
/** The most candidate explanations kept from one text. */
const MAX_CANDIDATES = 200;

/** A plain-text report read once: the recipients it names and the explanations it gives. */
export interface TextReport {
  /** The recipients the text names, each with its explanation; empty when it names none in a form this knows. */
  recipients(): PlainRecipient[];
  /**
   * The explanation the text gives for `email`: its own entry's, else the remote answer that names it, else
   * (unless `onlyNamed`: a DSN recipient without Diagnostic-Code, where the text may be about another) the first one.
   */
  explain(email: string, onlyNamed?: boolean): string;
}

export function readText(own: string): TextReport {
  const all = lines(own, 3000);
  let named: PlainRecipient[] | undefined;
  let answers: string[] | undefined;
  let coded: string[] | undefined;
  let introduced: string | undefined;

  /** The lines that say what the remote server answered, in order (wrapped lines joined). */
  const answerLines = (): string[] => {
    if (answers) return answers;
    answers = [];
    for (let i = 0; i < all.length && answers.length < MAX_CANDIDATES; i++) {
      for (const re of DIAGNOSTIC_LINES) {
        const m = re.exec(all[i]);
        if (!m) continue;
        let found = m[1].trim();
        for (let j = i + 1; j < all.length && j <= i + 4 && /^[ \t]+\S/.test(all[j]) && !ADDRESS_LINE.test(all[j]); j++) found += ' ' + all[j].trim();
        if (found) answers.push(found);
        break;
      }
    }
    return answers;
  };
  /** Lines with a code where no line says "said:" or starts with one. */
  const codedLines = (): string[] => (coded ??= all.filter((l) => CODE_LINE.test(l) && !DSN_FIELD_LINE.test(l)).slice(0, MAX_CANDIDATES).map((l) => l.trim()));
  /** "The response was:" / "Reason:" with the answer on the lines below. */
  const afterIntro = (): string => {
    if (introduced !== undefined) return introduced;
    introduced = '';
    for (let i = 0; i < all.length && !introduced; i++) {
      if (!ANSWER_INTRO.test(all[i])) continue;
      const out: string[] = [];
      for (let j = i + 1; j < all.length && j <= i + 6; j++) {
        if (BLANK(all[j])) {
          if (out.length) break;
          continue;
        }
        out.push(all[j].trim());
      }
      introduced = out.join(' ');
    }
    return introduced;
  };
  /** The answer naming `email`, else the first answer, else the first coded line naming it, else any. */
  const answerFor = (email: string): string => {
    const a = answerLines();
    const mine = a.find((l) => l.toLowerCase().includes(email));
    if (mine || a.length) return mine ?? a[0];
    const c = codedLines();
    return c.find((l) => l.toLowerCase().includes(email)) ?? c[0] ?? '';
  };

  const recipients = (): PlainRecipient[] => {
    if (named) return named;
    named = [...entries(all)].map(([email, block]) => {
      let diagnostic = block;
      if (!inferStatus(diagnostic)) {
        const line = answerFor(email) || afterIntro();
        if (line) diagnostic = diagnostic ? `${diagnostic} ${line}` : line;
      }
      return { email, diagnostic: squeeze(diagnostic) };
    });
    return named;
  };

  return {
    recipients,
    explain(email, onlyNamed = false) {
      const entry = recipients().find((r) => r.email === email);
      if (entry?.diagnostic) return entry.diagnostic;
      const line = answerFor(email);
      if (onlyNamed) return line.toLowerCase().includes(email) ? squeeze(line) : '';
      return squeeze(line || afterIntro());
    },
  };
}

/** The addresses the text names as failed or delayed, each with the words that follow it. */
function entries(all: string[]): Map<string, string> {
  const found = new Map<string, string>();
  const add = (email: string, diagnostic: string) => {
    const cur = found.get(email);
    if (cur === undefined ? found.size < MAX_RECIPIENTS : !cur && diagnostic) found.set(email, diagnostic);
  };

  // qmail, Yahoo, Postfix's human part: `<addr>:` then the explanation, up to a blank line.
  for (let i = 0; i < all.length; i++) {
    const m = ANGLE_HEAD.exec(all[i]);
    if (!m) continue;
    const email = addressesIn(m[1] ?? m[2], 1)[0];
    if (email) add(email, followingBlock(all, i, m[3], true));
  }

  // Sendmail's transcript: the address in the server's answer.
  for (const line of all) {
    const m = TRANSCRIPT_LINE.exec(line);
    const email = m && addressesIn(m[2], 1)[0];
    if (email) add(email, line.replace(/^[ \t]*(<<<[ \t]*)?/, ''));
  }

  // Lists after an introducing line: Exim, Sendmail, Gmail's old text, Microsoft's "these recipients or groups".
  for (let i = 0; i < all.length; i++) {
    if (!LIST_INTRO.test(all[i])) continue;
    let seen = 0;
    let skipped = 0;
    for (let j = i + 1; j < all.length && j <= i + 40; j++) {
      const line = all[j];
      if (BLANK(line)) {
        if (seen) {
          // Several blank-separated entries (Exim) continue while the next line is an indented address.
          const next = all.slice(j + 1, j + 3).find((l) => !BLANK(l));
          if (!next || !ADDRESS_LINE.test(next)) break;
        }
        continue;
      }
      const m = ADDRESS_LINE.exec(line) ?? ANGLE_HEAD.exec(line.trim()) ?? LIST_ENTRY.exec(line);
      if (!m) {
        // Before the first address a short line may still belong to the heading ("failed:", a ruler).
        if (!seen && !/^[ \t]/.test(line) && ++skipped > 2) break;
        continue;
      }
      const email = addressesIn(m[1] ?? m[2] ?? '', 1)[0] ?? addressesIn(line, 1)[0];
      if (!email) continue;
      seen++;
      add(email, followingBlock(all, j, restAfter(line, email), false));
    }
  }

  // "Your message wasn't delivered to addr because …" (Gmail), "could not be delivered to addr", "rejected recipient <addr>".
  for (const line of all) {
    const m = DELIVERED_TO.exec(line);
    const email = m && addressesIn(m[1], 1)[0];
    if (email) add(email, '');
  }
  return found;
}

const DELIVERED_TO =
  /(?:(?:(?:wasn't|was not|couldn't be|could not be|has not been) delivered|error delivering your (?:mail|message)|unable to deliver (?:your|the) message) to|rejected recipient) ([^\s@]+@[^\s@]+)/i;
