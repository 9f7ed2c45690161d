import type { Config } from '../../config';
import type { Ctx } from '../../context';
import { signPieces } from '../../dkim/sign';
import { verpAddress } from '../../bounces/verp';
import { RESERVED_COLUMNS } from '../../contacts/columns';
import { AppError, invalid, notFound2, type FieldErrors } from '../../http/errors';
import { MailError, type Mailer } from '../../mail/mailer';
import type { ContactFields, RecipientData, RenderedContent } from '../../render/render';
import { compileSource, unsentClickUrl, unsentToken, type CompiledSource } from '../../render/preview-source';
import { sampleRecipient } from '../../render/sample';
import type { MessageSource } from '../../sources';
import { erasureCheck, suppressionJoins } from '../../suppression';
import { variationsWithSend } from '../../single-sends/rows';
import { releaseTestMessages, reserveTestMessages } from '../../single-sends/test-sends';
import { liveRows } from '../shared/crud';
import { findVerifiedSender, senderIdMessages } from '../senders/senders.service';
import { findByUtr, type SingleSendRow } from './single-sends.service';

/**
 * A send's preview (GET /single/send/preview) and its test messages (POST /single/send/test).
 * Both compile the send's design as the sender does (src/render/preview-source.ts) and fill it
 * with a contact's values, or sample ones: the preview shows what that contact would get, byte
 * for byte but for the tokens of its links; a test copy is that message, DKIM-signed, sent to
 * another address with `[Test] ` before its subject.
 */

/** Most test messages per account in any hour (across every process). */
export const TEST_MESSAGES_PER_HOUR = 50;

const LETTERS = 'ABCDEF';

interface VariationSource {
  /** A … F (A: the send's own). */
  variation: string;
  source: MessageSource;
}

/** What a send's messages are compiled from: the send, or an A/B send's variations, A first (as the sender takes them). */
async function sourcesOf(ctx: Ctx, row: SingleSendRow): Promise<VariationSource[]> {
  const variations = await variationsWithSend<{ id: number; idx: number }>(ctx.db, ctx.userId, row.id);
  if (variations.length === 0) return [{ variation: 'A', source: { kind: 'single_send', singleSendId: row.id } }];
  return variations.map((v) => ({ variation: LETTERS[v.idx], source: { kind: 'ab_variation', singleSendId: row.id, variationId: v.id } }));
}

type Person = Omit<RecipientData, 'token'>;

/**
 * A live contact of the account, read as the sender reads a recipient row's contact (its country
 * by name); anything else answers the route's not found (NF2, as for its utr: one not-found per route).
 */
async function contactOf(ctx: Ctx, contactId: number): Promise<Person> {
  const columns = RESERVED_COLUMNS.filter((f) => f !== 'country').map((f) => `contacts.${f}`);
  const c = (await liveRows(ctx, 'contacts')
    .leftJoin('countries as co', 'co.id', 'contacts.country_id')
    .where('contacts.id', contactId)
    .first(...columns, 'co.name as country', 'contacts.custom_fields')) as
    | (ContactFields & { email: string; custom_fields: Record<string, unknown> | null })
    | undefined;
  if (!c) throw notFound2();
  return { email: c.email, fields: c, custom: c.custom_fields };
}

/** The person a preview or test is made for: the contact, or the sample person of the design's custom fields. */
function personFor(contact: Person | undefined, design: CompiledSource): Person {
  return contact ?? sampleRecipient(design.customFields);
}

/** Each variation compiled; a send without a design yet answers VAL as scheduling it would. */
async function compileAll(ctx: Ctx, config: Config, row: SingleSendRow, subjectPrefix?: string) {
  const out: Array<{ variation: string; design: CompiledSource }> = [];
  for (const v of await sourcesOf(ctx, row)) {
    const design = await compileSource(ctx.db, config, ctx.userId, v.source, { links: 'unregistered', subjectPrefix });
    if (!design) throw invalid({ template_id: ['The template id field is required.'] });
    out.push({ variation: v.variation, design });
  }
  return out;
}

export interface SendPreview extends RenderedContent {
  /** A/B sends only: every variation's message, A first (A's is also the top level's). */
  variations?: Array<RenderedContent & { variation: string }>;
}

/**
 * GET /single/send/preview: what contact `contactId` of the account (NF2 for any other) would get
 * from send `utr` (NF2), or the sample person without one — subject, HTML and text, placeholders
 * filled, tracked links and the unsubscribe link as the message has them (their tokens name no
 * message). Works on drafts: what is missing renders empty, and a draft without a design answers
 * VAL (`template_id`).
 */
export async function previewSingleSend(ctx: Ctx, config: Config, utr: string, contactId?: number): Promise<SendPreview> {
  const row = await findByUtr(ctx, utr);
  const contact = contactId === undefined ? undefined : await contactOf(ctx, contactId);
  const token = unsentToken();
  const rendered = (await compileAll(ctx, config, row)).map(({ variation, design }) => ({
    variation,
    ...design.compiled.content({ ...personFor(contact, design), token, clickUrl: () => unsentClickUrl(config.publicUrl) }),
  }));
  const { subject, html, text } = rendered[0];
  return rendered.length > 1 ? { subject, html, text, variations: rendered } : { subject, html, text };
}

/** The addresses among `emails` that the account may not mail under the send's unsubscribe group, with why (VAL keys `emails.<i>`). */
async function suppressedAddresses(ctx: Ctx, groupId: number | null, emails: string[], errors: FieldErrors): Promise<void> {
  const { joins, reason } = suppressionJoins(ctx.db, ctx.userId, groupId, 'v.email', await erasureCheck(ctx.db, ctx.userId));
  const { rows } = await ctx.db.raw(`SELECT v.n::int AS n, ${reason} AS reason FROM unnest(?::text[]) WITH ORDINALITY AS v(email, n) ?`, [emails, joins]);
  for (const r of rows as Array<{ n: number; reason: string | null }>) {
    const i = r.n - 1;
    if (r.reason) errors[`emails.${i}`] = [`The emails.${i} is suppressed (${r.reason.replace(/_/g, ' ')}): this account sends it no mail.`];
  }
}

export interface TestSendDeps {
  config: Config;
  mailer: Mailer;
}

/**
 * POST /single/send/test: one copy of each variation of send `utr` to each address, as contact
 * `contactId` (or the sample person) would get it, `[Test] ` before its subject, DKIM-signed and
 * sent as the sender sends (the VERP envelope when BOUNCE_DOMAIN is set). No recipient row, so no
 * statistics and no status move; its links lead straight to their destination (no click is
 * recorded) and its unsubscribe link unsubscribes nobody. Refused with VAL: a send that lacks a
 * subject, a verified sender or a design; a suppressed address; more messages than the hourly
 * limit allows at all. Past TEST_MESSAGES_PER_HOUR in the last hour: 429 with Retry-After. A
 * mail server that does not take a message: 503, the messages it did not take not counted.
 * Returns how many messages were sent.
 */
export async function sendTestMessages(ctx: Ctx, deps: TestSendDeps, utr: string, input: { emails: string[]; contact_id?: number }): Promise<number> {
  const { config, mailer } = deps;
  const row = await findByUtr(ctx, utr);
  const contact = input.contact_id === undefined ? undefined : await contactOf(ctx, input.contact_id);
  const errors: FieldErrors = {};
  if (!row.subject) errors.subject = ['The subject field is required.'];
  if (row.sender_id === null) errors.sender_id = ['The sender id field is required.'];
  else {
    const sender = await findVerifiedSender(ctx, row.sender_id);
    if (typeof sender === 'string') errors.sender_id = [senderIdMessages[sender]];
  }
  await suppressedAddresses(ctx, row.unsubscribe_group_id, input.emails, errors);
  if (Object.keys(errors).length) throw invalid(errors);
  const designs = await compileAll(ctx, config, row, '[Test] ');

  const messages = input.emails.flatMap((to) => designs.map(({ design }) => ({ to, design })));
  if (messages.length > TEST_MESSAGES_PER_HOUR) {
    throw invalid({
      emails: [`The test would send ${messages.length} messages (each of the ${designs.length} variations to each address); at most ${TEST_MESSAGES_PER_HOUR} test messages are sent per hour.`],
    });
  }
  const reserved = await reserveTestMessages(ctx.db, ctx.userId, row.id, messages.map((m) => m.to), TEST_MESSAGES_PER_HOUR);
  if ('retryAfterSeconds' in reserved) {
    const wait = String(reserved.retryAfterSeconds);
    throw new AppError(429, `Too Many Requests: at most ${TEST_MESSAGES_PER_HOUR} test messages are sent per hour; try again in ${wait} seconds.`, { 'Retry-After': wait });
  }
  for (const [i, { to, design }] of messages.entries()) {
    const token = unsentToken();
    const messageId = `<${token}@${design.domain}>`;
    const unsigned = design.compiled.render({ ...personFor(contact, design), to, token }, messageId);
    const raw = await signPieces(ctx.db, config, ctx.userId, design.fromEmail, unsigned);
    try {
      // The send's own stream (marketing) and the account's pinned routes: a test shows how the send will go.
      await mailer.send({ from: config.bounceDomain ? verpAddress(config.bounceDomain, token) : design.fromEmail, to, raw, userId: ctx.userId });
    } catch (err) {
      await releaseTestMessages(ctx.db, ctx.userId, reserved.ids.slice(i));
      const why = err instanceof MailError ? err.message : String((err as Error)?.message ?? err);
      throw new AppError(503, `Service Unavailable: the mail server did not take the test message to ${to} (${i} of ${messages.length} sent): ${why}`, { 'Retry-After': '60' });
    }
  }
  return messages.length;
}
