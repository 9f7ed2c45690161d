import type { Knex } from 'knex';
import type { Config } from '../config';
import { senderAddress } from '../resources/senders/senders.service';
import { registerLinks, trackedUrls, type LinkOwner } from './links';
import { compileDesign, type CompiledDesign } from './render';
import type { ClaimedRow } from './queue';

/**
 * The compiled design behind a recipient row: its single send's (or, later, its automation
 * email's). Compiled once and kept while the source is sending; a running send can no
 * longer change.
 */
export interface LoadedDesign {
  compiled: CompiledDesign;
  fromEmail: string;
  /** Domain of Message-IDs. */
  domain: string;
}

export type DesignKey = string;

export function designKey(row: Pick<ClaimedRow, 'single_send_id' | 'automation_schedule_id'>): DesignKey {
  return row.single_send_id ? `s:${row.single_send_id}` : `a:${row.automation_schedule_id}`;
}

async function customFieldNames(db: Knex, userId: number): Promise<Map<string, string>> {
  const rows = (await db('custom_fields').where({ user_id: userId }).select('id', 'field_name')) as Array<{ id: number; field_name: string }>;
  return new Map(rows.map((f) => [String(f.id), f.field_name]));
}

/** The design's links registered for tracking (TRACK_CLICKS), or none. */
async function linksOf(db: Knex, config: Config, owner: LinkOwner, html: string): Promise<Map<string, number> | undefined> {
  if (!config.trackClicks) return undefined;
  return registerLinks(db, owner, trackedUrls(html, config.publicUrl));
}

async function singleSendDesign(db: Knex, config: Config, id: number): Promise<LoadedDesign | undefined> {
  const send = await db('single_sends as s')
    .join('templates as t', 't.id', 's.template_id')
    .where('s.id', id)
    .first('s.*', 't.html_code');
  if (!send) return undefined;
  const fromEmail = send.from_sender as string;
  const html = (send.template_html as string | null) ?? (send.html_code as string);
  return {
    fromEmail,
    domain: fromEmail.split('@')[1] ?? 'localhost',
    compiled: compileDesign({
      subject: send.subject,
      preheader: send.preheader,
      html,
      fromName: send.sender_name ?? '',
      fromEmail,
      replyTo: send.reply_to,
      senderAddress: send.sender_address ?? '',
      publicUrl: config.publicUrl,
      customFields: await customFieldNames(db, send.user_id),
      links: await linksOf(db, config, { userId: send.user_id, singleSendId: id }, html),
      espMetadataHeaders: config.espMetadataHeaders,
    }),
  };
}

/** An automation email: its own subject and design, its sender as it is now. */
async function automationDesign(db: Knex, config: Config, scheduleId: number): Promise<LoadedDesign | undefined> {
  const s = await db('automation_schedules as s')
    .join('templates as t', 't.id', 's.template_id')
    .join('senders as snd', 'snd.id', 's.sender_id')
    .where('s.id', scheduleId)
    .first('s.user_id', 's.automation_id', 's.subject', 's.template_html', 't.html_code', 'snd.from_name', 'snd.from_email', 'snd.reply_to_email',
      'snd.company_address', 'snd.company_address2', 'snd.zip_code', 'snd.country_id', 'snd.state_id', 'snd.city_id');
  if (!s) return undefined;
  const fromEmail = s.from_email as string;
  const html = (s.template_html as string | null) ?? (s.html_code as string);
  return {
    fromEmail,
    domain: fromEmail.split('@')[1] ?? 'localhost',
    compiled: compileDesign({
      subject: s.subject,
      preheader: '',
      html,
      fromName: s.from_name,
      fromEmail,
      replyTo: s.reply_to_email,
      senderAddress: await senderAddress(db, s),
      publicUrl: config.publicUrl,
      customFields: await customFieldNames(db, s.user_id),
      links: await linksOf(db, config, { userId: s.user_id, automationId: s.automation_id }, html),
      espMetadataHeaders: config.espMetadataHeaders,
    }),
  };
}

/**
 * Compiled designs by source. Single sends cannot change once running; automation emails
 * pick up sender edits within a minute.
 */
export class DesignCache {
  private readonly entries = new Map<DesignKey, { design: LoadedDesign | undefined; at: number }>();

  constructor(
    private readonly db: Knex,
    private readonly config: Config,
    private readonly max = 200,
    private readonly ttlMs = 60_000,
  ) {}

  /** The cached design, if fresh: what every message but a design's first needs, without a promise. */
  peek(row: ClaimedRow): LoadedDesign | undefined {
    const hit = this.entries.get(designKey(row));
    return hit && Date.now() - hit.at < this.ttlMs ? hit.design : undefined;
  }

  async get(row: ClaimedRow): Promise<LoadedDesign | undefined> {
    const key = designKey(row);
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.design;
    const design = row.single_send_id
      ? await singleSendDesign(this.db, this.config, row.single_send_id)
      : row.automation_schedule_id
        ? await automationDesign(this.db, this.config, row.automation_schedule_id)
        : undefined;
    this.entries.delete(key);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as DesignKey);
    this.entries.set(key, { design, at: Date.now() });
    return design;
  }
}
