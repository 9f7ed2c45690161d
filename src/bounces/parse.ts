import type { ParsedMail } from 'mailparser';
import {
  addressesIn,
  fieldAddress,
  fieldValue,
  fieldValues,
  headBlock,
  inferStatus,
  readBlocks,
  readFields,
  squeeze,
  statusField,
  type Field,
} from './fields';
import { MAX_RECIPIENTS, ownText, readText, returnedText, type TextReport } from './plain';

/**
 * Returned mail: what a message that arrived at Herald's bounce address is (docs/decisions.md,
 * "Bounce and complaint parsing"). Reports are recognised first — an RFC 3464 delivery-status
 * part, an RFC 5965 feedback-report part, a known MTA's plain-text bounce — and only a message
 * that is none of them can be an auto-reply or a challenge: real bounces carry
 * `Auto-Submitted: auto-replied` too.
 */

export type BounceAction = 'failed' | 'delayed' | 'delivered' | 'relayed' | 'expanded';

export interface ReportRecipient {
  /** Lower-cased final (or original) recipient address. */
  email: string;
  action: BounceAction;
  /** Enhanced status code like '5.1.1' (inferred from the diagnostic/SMTP code for non-standard bounces; null if none). */
  status: string | null;
  /** Diagnostic-Code text or the MTA's explanation, trimmed, ≤ 1000 chars. */
  diagnostic: string;
  /** The DSN's Original-Recipient when it names another address than `email` (a forward, an alias), lower-cased. */
  originalRecipient?: string;
}

export interface InboundReport {
  type: 'bounce' | 'complaint' | 'other';
  /** For 'other': 'auto-reply' | 'challenge' | 'not-a-report'. */
  reason?: 'auto-reply' | 'challenge' | 'not-a-report';
  /** Bounce: one per recipient the report covers. Complaint: the complained-about address when the report names it (ARF Original-Rcpt-To / Removal-Recipient, else the To of the returned message), possibly empty. */
  recipients: ReportRecipient[];
  /** Message-ID of the original (returned) message without angle brackets, from message/rfc822 or text/rfc822-headers parts or inline-quoted headers; null if not found. */
  originalMessageId: string | null;
  /** Lower-cased addresses in the report's own Delivered-To, X-Original-To, Envelope-To, X-Envelope-To, To headers: where a VERP address (bounce+<token>@domain) is found when the report came from a mailbox. */
  reportRecipients: string[];
  /** ARF Feedback-Type (abuse, fraud, virus, other, not-spam...) for complaints. */
  feedbackType?: string;
}

/** At most this much of a message is read; a report's parts come first, a long tail is the returned message. */
const MAX_BYTES = 256 * 1024;

/** Headers of the report itself where the address it was delivered to shows, VERP token included. */
const ENVELOPE_HEADERS = ['delivered-to', 'x-original-to', 'envelope-to', 'x-envelope-to', 'to'];

const DSN_TYPES = new Set(['message/delivery-status', 'message/global-delivery-status']);
const FEEDBACK_TYPES = new Set(['message/feedback-report']);
const RETURNED_MESSAGE_TYPES = new Set(['message/rfc822', 'message/global', 'message/partial']);
const RETURNED_HEADER_TYPES = new Set(['text/rfc822-headers', 'text/rfc822-header', 'message/global-headers', 'message/rfc822-headers']);

/**
 * mailparser, loaded with the first report: its modules take ≈ 20 MB that a Herald receiving no
 * bounces by mail (no BOUNCE_DOMAIN port, no BOUNCE_IMAP_URL) never needs (bench/README.md, idle RSS).
 */
function mailparser(): typeof import('mailparser') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('mailparser') as typeof import('mailparser');
}

export async function parseReport(raw: Buffer | string): Promise<InboundReport> {
  let reportRecipients: string[] = [];
  try {
    const input = toBuffer(raw);
    if (!input) return other('not-a-report', []);
    const topFields = readFields(headBlock(input.subarray(0, 64 * 1024).toString('latin1')));
    reportRecipients = envelopeAddresses(topFields);
    const mail = await mailparser().simpleParser(input, {
      keepDeliveryStatus: true,
      ignoreEmbedded: true,
      skipImageLinks: true,
      skipTextLinks: true,
      skipTextToHtml: true,
      checksumAlgo: false,
      maxHtmlLengthToParse: MAX_BYTES,
      maxChildNodes: 200,
      maxHeadSize: 128 * 1024,
    });
    return read(mail, input, topFields, reportRecipients);
  } catch {
    return other('not-a-report', reportRecipients);
  }
}

/**
 * What a recipient's result means for Herald: hard → suppress at once, soft → counted,
 * deferred → a `deferred` event, none → ignore (delivered/relayed/expanded).
 * The status class decides; words decide only when there is no status.
 */
export function classify(r: ReportRecipient): 'hard' | 'soft' | 'deferred' | 'none' {
  if (r.action === 'delayed') return 'deferred';
  if (r.action !== 'failed') return 'none';
  const cls = /^\s*([245])\./.exec(r.status ?? '')?.[1];
  if (cls === '5') return 'hard';
  if (cls === '4') return 'soft';
  return TEMPORARY.test(r.diagnostic) ? 'soft' : 'hard';
}

/** Words of a temporary failure, for a failed recipient without a status code. */
const TEMPORARY =
  /mailbox (is )?full|over ?quota|quota (exceeded|limit)|exceed(s|ed)? (the |his |her |their )?(storage|quota)|insufficient (system )?storage|out of (storage|space)|try(ing)? (again )?later|temporar(y|ily)|timed? ?out|connection (refused|reset|lost)|deferred|greylist|too many (connections|messages|recipients)|rate limit|throttl|(service|resources?) (temporarily )?unavailable|not yet been delivered|will (be )?retr(y|ied)/i;

// --- reading a parsed message ---------------------------------------------------------------

interface Parts {
  dsn: string[];
  feedback: string[];
  /** Header blocks of returned messages (message/rfc822 heads, text/rfc822-headers). */
  returned: Field[][];
  /** The human-readable text: text/plain parts (or the HTML's text), and text attachments. */
  text: string;
}

function toBuffer(raw: unknown): Buffer | undefined {
  if (Buffer.isBuffer(raw)) return raw.length > MAX_BYTES ? raw.subarray(0, MAX_BYTES) : raw;
  if (typeof raw === 'string') return Buffer.from(raw.length > MAX_BYTES ? raw.slice(0, MAX_BYTES) : raw, 'utf8').subarray(0, MAX_BYTES);
  return undefined;
}

function partsOf(mail: ParsedMail, input: Buffer): Parts {
  const parts: Parts = { dsn: [], feedback: [], returned: [], text: mail.text ?? '' };
  for (const a of mail.attachments) {
    const type = (a.contentType ?? '').toLowerCase();
    const body = a.content.toString('utf8');
    if (DSN_TYPES.has(type)) parts.dsn.push(body);
    else if (FEEDBACK_TYPES.has(type)) parts.feedback.push(body);
    else if (RETURNED_MESSAGE_TYPES.has(type) || RETURNED_HEADER_TYPES.has(type)) parts.returned.push(readFields(headBlock(body)));
    else if (type === 'text/plain') parts.text += `\n${body}`;
  }
  if (!parts.text.trim() && !mail.attachments.length) {
    // A multipart whose boundary never occurs (a broken report) leaves mailparser nothing: read the raw body.
    const raw = input.toString('utf8');
    const body = raw.search(/\r?\n\r?\n/);
    if (body !== -1) parts.text = raw.slice(body).trim();
  }
  return parts;
}

function read(mail: ParsedMail, input: Buffer, top: Field[], reportRecipients: string[]): InboundReport {
  const parts = partsOf(mail, input);
  const subject = mail.subject ?? fieldValue(top, 'subject') ?? '';
  const own = ownText(parts.text);
  const returned = parts.returned.length ? parts.returned : inlineReturned(parts.text);
  const originalMessageId = messageIdOf(returned) ?? dsnMessageId(parts.dsn);
  const base = { originalMessageId, reportRecipients };
  const contentType = fieldValue(top, 'content-type') ?? '';
  const reportType = /report-type\s*=\s*"?([\w-]+)/i.exec(contentType)?.[1]?.toLowerCase();

  // Complaints: an ARF part (Microsoft's older JMRP, without one, is recognised after the delivery-status parts).
  if (parts.feedback.length || reportType === 'feedback-report') {
    const fields = readFields(parts.feedback.join('\n'));
    const feedbackType = (fieldValue(fields, 'feedback-type') ?? 'other').toLowerCase().split(/[\s;]/)[0] || 'other';
    const named = [...fieldValues(fields, 'original-rcpt-to'), ...fieldValues(fields, 'removal-recipient')]
      .map((v) => fieldAddress(v))
      .filter((a): a is string => !!a && !isRedacted(a));
    const emails = unique(named.length ? named : complainedInReturned(returned)).slice(0, MAX_RECIPIENTS);
    return { type: 'complaint', ...base, feedbackType, recipients: emails.map((email) => complaintRecipient(email, feedbackType)) };
  }

  // Bounces: delivery-status parts first, the text of known MTAs next.
  const text = readText(own);
  const delayedWords = DELAY_WORDS.test(subject) || DELAY_WORDS.test(own);
  const fromDsn = parts.dsn.flatMap((body) => dsnRecipients(body, text, delayedWords));
  if (fromDsn.length) return { type: 'bounce', ...base, recipients: dedupe(fromDsn) };
  if (isLegacyJmrp(top, returned)) {
    const emails = complainedInReturned(returned);
    return { type: 'complaint', ...base, feedbackType: 'abuse', recipients: emails.map((email) => complaintRecipient(email, 'abuse')) };
  }
  if (reportType === 'delivery-status' || parts.dsn.length || looksLikeBounce(top, subject, own)) {
    return { type: 'bounce', ...base, recipients: plainBounce(top, own, text, returned, delayedWords, reportRecipients) };
  }

  // Not reports: nothing was returned, so no recipient and no original Message-ID.
  if (reportType === 'disposition-notification') return other('auto-reply', reportRecipients);
  if (isChallenge(top, subject, own)) return other('challenge', reportRecipients);
  if (isAutoReply(top, subject, own)) return other('auto-reply', reportRecipients);
  return other('not-a-report', reportRecipients);
}

function other(reason: NonNullable<InboundReport['reason']>, reportRecipients: string[]): InboundReport {
  return { type: 'other', reason, recipients: [], originalMessageId: null, reportRecipients };
}

function unique<T>(xs: T[]): T[] {
  return [...new Set(xs)];
}

function envelopeAddresses(top: Field[]): string[] {
  return unique(ENVELOPE_HEADERS.flatMap((name) => fieldValues(top, name).flatMap((v) => addressesIn(v)))).slice(0, MAX_RECIPIENTS);
}

// --- the returned message -------------------------------------------------------------------

/**
 * Header blocks quoted in the text: after a "copy of the message" marker, else the first run of
 * header lines that names a Message-ID, From or To, else any `Message-ID:` line of the text.
 */
function inlineReturned(text: string): Field[][] {
  const copy = returnedText(text);
  if (copy) {
    const fields = readFields(headBlock(copy));
    if (fields.length) return [fields];
  }
  const t = text.slice(0, MAX_BYTES);
  const start = /^(?:Return-Path|Received|Message-I[Dd]|From|To|Subject|Date|MIME-Version|DKIM-Signature)[ \t]*:/m.exec(t);
  if (start) {
    const fields = readFields(headBlock(t.slice(start.index)));
    if (fields.length >= 3 && fields.some((f) => f.name === 'message-id' || f.name === 'to')) return [fields];
  }
  const m = /^[ \t]*Message-I[Dd][ \t]*:[ \t]*(\S[^\r\n]*|(?:\r?\n[ \t]+\S[^\r\n]*))/m.exec(t);
  return m ? [[{ name: 'message-id', value: m[1].trim() }]] : [];
}

function cleanMessageId(value: string | undefined): string | null {
  if (!value) return null;
  const bracketed = /<([^<>\s]{1,500})>/.exec(value);
  const id = bracketed ? bracketed[1] : value.trim().split(/\s+/)[0];
  return id && id.length <= 500 && id.includes('@') ? id : null;
}

function messageIdOf(blocks: Field[][]): string | null {
  for (const fields of blocks) {
    const id = cleanMessageId(fieldValue(fields, 'message-id'));
    if (id) return id;
  }
  return null;
}

/** Gmail and others name the returned message in the DSN's per-message fields. */
function dsnMessageId(bodies: string[]): string | null {
  for (const body of bodies) {
    const fields = readFields(body);
    const id = cleanMessageId(fieldValue(fields, 'x-original-message-id') ?? fieldValue(fields, 'original-message-id'));
    if (id) return id;
  }
  return null;
}

/** Redacted or placeholder recipients of a returned message (JMRP, "undisclosed-recipients"). */
const REDACTED = /^(redacted|undisclosed|unknown|hidden|removed|anonymous|xx+|\*+|_+)/i;

function isRedacted(address: string): boolean {
  return REDACTED.test(address) || /redacted/i.test(address);
}

function complainedInReturned(blocks: Field[][]): string[] {
  for (const fields of blocks) {
    const hm = fieldValues(fields, 'x-hmxmroriginalrecipient').flatMap((v) => addressesIn(v));
    const to = hm.length ? hm : fieldValues(fields, 'to').flatMap((v) => addressesIn(v));
    const real = to.filter((a) => !isRedacted(a));
    if (real.length) return unique(real);
  }
  return [];
}

function complaintRecipient(email: string, feedbackType: string): ReportRecipient {
  // The message was delivered; the complaint is its own fact, not a bounce (classify() says 'none').
  return { email, action: 'delivered', status: null, diagnostic: `Feedback-Type: ${feedbackType}` };
}

function isLegacyJmrp(top: Field[], returned: Field[][]): boolean {
  if (!returned.some((f) => fieldValue(f, 'x-hmxmroriginalrecipient'))) return false;
  const from = (fieldValue(top, 'from') ?? '').toLowerCase();
  return /@(hotmail|outlook|live|msn)\.[a-z.]+|microsoft/.test(from) || /complaint/i.test(fieldValue(top, 'subject') ?? '');
}

// --- RFC 3464 delivery-status ---------------------------------------------------------------

const ACTIONS: Record<string, BounceAction> = {
  failed: 'failed',
  failure: 'failed',
  delayed: 'delayed',
  delay: 'delayed',
  delivered: 'delivered',
  relayed: 'relayed',
  expanded: 'expanded',
};

/** Per-recipient fields of RFC 3464 §2.3: seeing one again within a block starts the next recipient (a missing blank line). */
const RECIPIENT_FIELDS = new Set(['original-recipient', 'final-recipient', 'action', 'status', 'diagnostic-code', 'x-actual-recipient']);

function recipientGroups(body: string): Field[][] {
  const groups: Field[][] = [];
  for (const block of readBlocks(body)) {
    let current: Field[] = [];
    let names = new Set<string>();
    for (const f of block) {
      if (RECIPIENT_FIELDS.has(f.name) && names.has(f.name)) {
        groups.push(current);
        current = [];
        names = new Set();
      }
      current.push(f);
      names.add(f.name);
    }
    if (current.length) groups.push(current);
  }
  return groups.filter((g) => g.some((f) => f.name === 'final-recipient' || f.name === 'original-recipient' || f.name === 'x-actual-recipient'));
}

function dsnRecipients(body: string, text: TextReport, delayedWords: boolean): ReportRecipient[] {
  const out: ReportRecipient[] = [];
  for (const g of recipientGroups(body)) {
    if (out.length >= MAX_RECIPIENTS) break;
    const final = fieldAddress(fieldValue(g, 'final-recipient'));
    const actual = fieldAddress(fieldValue(g, 'x-actual-recipient'));
    const original = fieldAddress(fieldValue(g, 'original-recipient'));
    const email = final ?? actual ?? original;
    if (!email) continue;
    const diagnosticField = fieldValue(g, 'diagnostic-code');
    const diagnosticText = diagnosticField ? stripType(diagnosticField) : '';
    let status = statusField(fieldValue(g, 'status'));
    const detailed = inferStatus(diagnosticText);
    // A generic x.0.0 gives way to the diagnostic's detail of the same class; the class never changes.
    if ((!status || /^\d\.0\.0$/.test(status)) && detailed && (!status || detailed[0] === status[0])) status = detailed;
    const actionWord = (fieldValue(g, 'action') ?? '').toLowerCase().split(/[\s(;]/)[0];
    const action = ACTIONS[actionWord] ?? actionFromStatus(status, delayedWords);
    const diagnostic = diagnosticText
      ? squeeze(diagnosticText)
      : action === 'failed' || action === 'delayed'
        ? text.explain(email, true) || statusComment(fieldValue(g, 'status'))
        : '';
    const r: ReportRecipient = { email, action, status, diagnostic };
    if (original && original !== email) r.originalRecipient = original;
    out.push(r);
  }
  return out;
}

/** The words a Status field may carry after its code: `4.0.0 (host name lookup failure)`. */
function statusComment(value: string | undefined): string {
  const m = /\((.{1,300})\)\s*$/.exec(value ?? '');
  return m ? squeeze(m[1]) : '';
}

/** `smtp; 550 …`, `X-Postfix; connect to …`: the diagnostic without its type. */
function stripType(value: string): string {
  const m = /^[ \t]*([A-Za-z][\w.-]{0,30})[ \t]*;(.*)$/s.exec(value);
  return m ? m[2].trim() : value.trim();
}

function actionFromStatus(status: string | null, delayedWords: boolean): BounceAction {
  if (status?.startsWith('2')) return 'delivered';
  if (status?.startsWith('4') && delayedWords) return 'delayed';
  return 'failed';
}

function dedupe(rs: ReportRecipient[]): ReportRecipient[] {
  const seen = new Map<string, ReportRecipient>();
  for (const r of rs) if (!seen.has(r.email)) seen.set(r.email, r);
  return [...seen.values()];
}

// --- plain-text bounces ---------------------------------------------------------------------

/** A report that says delivery is only delayed and will be retried. */
const DELAY_WORDS =
  /THIS IS A WARNING (MESSAGE )?ONLY|has not yet been delivered|delivery (to the following recipients? )?(has been |is )?delayed|\bdelayed mail\b|\(Delay\)|still being retried|will (continue to|keep) (try|trying|retry)|delivery attempts will continue|transient non-fatal errors|could not send message for past|warning: message \S+ delayed|message delayed/i;

const BOUNCE_SENDER = /^(mailer[-_]?daemon|mail[-_]?daemon|postmaster|mdaemon|double-bounce|mail-?delivery(-?system)?|bounces?)@/i;
const BOUNCE_SENDER_NAME = /mail delivery (system|subsystem|service)|mailer[- ]daemon|postmaster/i;
const BOUNCE_SUBJECT =
  /undeliver|returned mail|returning message|mail failure|error sending your (mail|message)|delivery (status notification|failure|failed|has failed|problem|notification|report|error|delayed|incomplete)|mail delivery (failed|failure|problem|system)|failure notice|failed delivery|could not be delivered|non-?delivery|nondeliverable|not delivered|message delayed|delayed mail|warning: (could not send|message \S+ delayed)|mail system error|returned to sender/i;
const BOUNCE_TEXT =
  /qmail-send program|trouble delivering your message|rejected recipient|created automatically by mail delivery software|I'm sorry to have to inform you that your message could not|could not be delivered to one or more (of its )?recipients|delivery has failed to these recipients|unable to deliver (your|the) message|following address(es)? had (permanent fatal|transient non-fatal) errors|address\(es\) failed|transcript of session follows|delivery to the following recipients? (failed|has been delayed)|message (wasn't|was not|couldn't be|could not be|has not been|has not yet been) delivered|remote host said:|SMTP error from remote mail server|diagnostic information for administrators|THIS IS A WARNING ONLY|Below this line is a copy of the message|permanent (error|failure)|\*\* (address not found|message not delivered|message blocked) \*\*/i;

function looksLikeBounce(top: Field[], subject: string, own: string): boolean {
  if (fieldValue(top, 'x-failed-recipients')) return true;
  const from = fieldValue(top, 'from') ?? '';
  const fromHit = addressesIn(from, 3).some((a) => BOUNCE_SENDER.test(a)) || BOUNCE_SENDER_NAME.test(from);
  const subjectHit = BOUNCE_SUBJECT.test(subject);
  const textHit = BOUNCE_TEXT.test(own.slice(0, 64 * 1024));
  return (textHit && (fromHit || subjectHit)) || (fromHit && subjectHit);
}

function plainBounce(
  top: Field[],
  own: string,
  text: TextReport,
  returned: Field[][],
  delayedWords: boolean,
  reportRecipients: string[],
): ReportRecipient[] {
  // Some MTAs (Amazon WorkMail, a few appliances) write the delivery-status fields into the text.
  if (/^[ \t]*(?:Final|Original)-Recipient[ \t]*:/im.test(own)) {
    const inText = dsnRecipients(own, text, delayedWords);
    if (inText.length) return dedupe(inText);
  }
  const action: BounceAction = delayedWords ? 'delayed' : 'failed';
  // The sender of the returned message (the report's own recipient) is not one of its failed recipients
  // (a transcript may quote its MAIL FROM), unless the report names nobody else (a message to oneself).
  const senders = new Set([
    ...reportRecipients,
    ...returned.flatMap((f) => ['from', 'return-path', 'sender'].flatMap((n) => fieldValues(f, n).flatMap((v) => addressesIn(v)))),
  ]);
  const named = text.recipients();
  const others = named.filter((r) => !senders.has(r.email));
  let found = others.length ? others : named;
  if (!found.length) {
    const failed = fieldValues(top, 'x-failed-recipients').flatMap((v) => addressesIn(v));
    // Herald mails one recipient per message: the returned message's To is who it was for; else the
    // one address the report's text names that is not the report's own sender or recipient.
    const to = returned.flatMap((f) => fieldValues(f, 'to').flatMap((v) => addressesIn(v))).slice(0, 1);
    const own1 = () => {
      const mine = new Set(['from', 'to', 'delivered-to', 'x-original-to', 'return-path'].flatMap((n) => fieldValues(top, n).flatMap((v) => addressesIn(v))));
      const named = addressesIn(own).filter((a) => !mine.has(a) && !BOUNCE_SENDER.test(a));
      return named.length === 1 ? named : [];
    };
    const emails = failed.length ? failed : to.length ? to : own1();
    found = emails.slice(0, MAX_RECIPIENTS).map((email) => ({ email, diagnostic: text.explain(email) }));
  }
  return found.map(({ email, diagnostic }) => ({ email, action, status: inferStatus(diagnostic), diagnostic }));
}

// --- not reports ----------------------------------------------------------------------------

const CHALLENGE_SENDER = /@([\w-]+\.)*(spamarrest|boxbe|mailblocks|sendio|choicemail|bluebottle|qurb)\.[a-z]+$/i;
const CHALLENGE_SUBJECT =
  /please (confirm|verify)|verification (required|needed|request)|(confirm|verify) (your|that you|you are)|challenge|awaiting (your )?(verification|confirmation|approval)|approve (your|the) (sender|message)|sender (verification|approval)|authori[sz]ation required/i;
const CHALLENGE_TEXT: RegExp[] = [
  /(confirm|verify|prove) (that )?you(?:'re| are) (a )?(human|real person|person|not a (robot|spammer|machine|computer))/i,
  /click (on )?(the )?(following |this )?link( below)? to (verify|confirm|have your (message|e-?mail) delivered|get your (message|e-?mail) delivered|be added|complete)/i,
  /your (message|e-?mail) (is|has been) (being )?(held|quarantined|placed on hold|put on hold)/i,
  /(sender|e-?mail) verification|challenge[- ]response|spam ?arrest|boxbe|mailblocks/i,
  /approved senders? list|guest list|(add|added) (you )?to (my|the) (approved|allowed|safe) (senders? )?list/i,
  /only (accept|receive) (e-?mail|messages) from (approved|verified|known) senders/i,
];

function isChallenge(top: Field[], subject: string, own: string): boolean {
  const from = addressesIn(fieldValue(top, 'from') ?? '', 3);
  if (from.some((a) => CHALLENGE_SENDER.test(a))) return true;
  const text = own.slice(0, 16 * 1024);
  const hits = CHALLENGE_TEXT.filter((re) => re.test(text)).length;
  return hits >= 2 || (hits >= 1 && CHALLENGE_SUBJECT.test(subject));
}

const AUTO_REPLY_HEADERS = ['x-autoreply', 'x-autorespond', 'x-autoresponder', 'x-autoreply-from', 'x-mail-autoreply', 'x-vacation'];
const AUTO_REPLY_SUBJECT =
  /auto(matic|matische)?[- ]?(reply|response|responder|antwort|respuesta|risposta|svar)|autoreply|out of (the )?office|\bOOO\b|away from (the )?office|on (vacation|holiday|leave)|vacation (reply|message|notice)|abwesen(d|heit)|réponse automatique|automatisch antwoord|fuera de la oficina|absence/i;
const AUTO_REPLY_TEXT =
  /I(?:'m| am| will be)( currently)? (out of (the )?office|away|on (vacation|holiday|leave|annual leave|parental leave))|out of (the )?office (until|from|through|and)|limited access to (my )?e-?mail|will (respond|reply|get back to you) (to your (message|e-?mail) )?(when|upon|as soon as) (I|my) return/i;

function isAutoReply(top: Field[], subject: string, own: string): boolean {
  const auto = fieldValue(top, 'auto-submitted');
  if (auto && !/^\s*no\b/i.test(auto)) return true;
  if (AUTO_REPLY_HEADERS.some((name) => fieldValue(top, name) !== undefined)) return true;
  if (/auto[-_]reply/i.test(fieldValue(top, 'precedence') ?? '')) return true;
  if (AUTO_REPLY_SUBJECT.test(subject)) return true;
  return AUTO_REPLY_TEXT.test(own.slice(0, 4000));
}
