import type { Knex } from 'knex';
import type { Config } from '../config';
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
  const rows = (await db('fields').where({ user_id: userId }).select('id', 'field_name')) as Array<{ id: number; field_name: string }>;
  return new Map(rows.map((f) => [String(f.id), f.field_name]));
}

async function singleSendDesign(db: Knex, config: Config, id: number): Promise<LoadedDesign | undefined> {
  const send = await db('single_sends as s')
    .join('templates as t', 't.id', 's.template_id')
    .where('s.id', id)
    .first('s.*', 't.html_code');
  if (!send) return undefined;
  const fromEmail = send.from_sender as string;
  return {
    fromEmail,
    domain: fromEmail.split('@')[1] ?? 'localhost',
    compiled: compileDesign({
      subject: send.subject,
      preheader: send.preheader,
      html: (send.template_html as string | null) ?? (send.html_code as string),
      fromName: send.sender_name ?? '',
      fromEmail,
      replyTo: send.reply_to,
      senderAddress: send.sender_address ?? '',
      publicUrl: config.publicUrl,
      customFields: await customFieldNames(db, send.user_id),
    }),
  };
}

export type DesignLoader = (db: Knex, config: Config, row: ClaimedRow) => Promise<LoadedDesign | undefined>;

/** Loaders for rows that are not single-send rows (automation emails register here). */
export const extraLoaders: DesignLoader[] = [];

export class DesignCache {
  private readonly entries = new Map<DesignKey, LoadedDesign | undefined>();

  constructor(
    private readonly db: Knex,
    private readonly config: Config,
    private readonly max = 200,
  ) {}

  async get(row: ClaimedRow): Promise<LoadedDesign | undefined> {
    const key = designKey(row);
    if (this.entries.has(key)) return this.entries.get(key);
    let design: LoadedDesign | undefined;
    if (row.single_send_id) design = await singleSendDesign(this.db, this.config, row.single_send_id);
    else for (const load of extraLoaders) design ??= await load(this.db, this.config, row);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as DesignKey);
    this.entries.set(key, design);
    return design;
  }
}
