import type { Knex } from 'knex';
import type { Config } from '../config';
import { designParts, sourceKey, sourceOfRow, type MessageSource, type SourceColumns } from '../sources';
import { registerLinks, trackedUrls } from '../render/links';
import { compileDesign, type CompiledDesign } from '../render/render';
import type { ClaimedRow } from '../deliveries/queue';

/**
 * The compiled design behind a recipient row: its source's (src/sources: a single send's, an
 * automation email's). Compiled once and kept while the source is sending; a running send can no
 * longer change.
 */
export interface LoadedDesign {
  compiled: CompiledDesign;
  fromEmail: string;
  /** Domain of Message-IDs. */
  domain: string;
}

export type DesignKey = string;

export function designKey(row: SourceColumns): DesignKey {
  const source = sourceOfRow(row);
  return source ? sourceKey(source) : 'none';
}

async function customFieldNames(db: Knex, userId: number): Promise<Map<string, string>> {
  const rows = (await db('custom_fields').where({ user_id: userId }).select('id', 'field_name')) as Array<{ id: number; field_name: string }>;
  return new Map(rows.map((f) => [String(f.id), f.field_name]));
}

/** A source's design compiled, with its links registered for tracking (TRACK_CLICKS) under its owner. */
async function loadDesign(db: Knex, config: Config, userId: number, source: MessageSource): Promise<LoadedDesign | undefined> {
  const parts = await designParts(db, userId, source);
  if (!parts) return undefined;
  const { owner, ...design } = parts;
  return {
    fromEmail: parts.fromEmail,
    domain: parts.fromEmail.split('@')[1] ?? 'localhost',
    compiled: compileDesign({
      ...design,
      publicUrl: config.publicUrl,
      customFields: await customFieldNames(db, userId),
      links: config.trackClicks ? await registerLinks(db, userId, owner, trackedUrls(parts.html, config.publicUrl)) : undefined,
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
    const source = sourceOfRow(row);
    const design = source && (await loadDesign(this.db, this.config, row.user_id, source));
    this.entries.delete(key);
    if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as DesignKey);
    this.entries.set(key, { design, at: Date.now() });
    return design;
  }
}
