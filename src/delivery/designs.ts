import type { Knex } from 'knex';
import type { Config } from '../config';
import { sourceKey, sourceOfRow, type MessageSource, type SourceColumns } from '../sources';
import { compileSource, type CompiledSource } from '../render/preview-source';
import type { ClaimedRow } from '../deliveries/queue';

/**
 * The compiled design behind a recipient row: its source's (src/sources: a single send's, an
 * automation email's), compiled by src/render/preview-source.ts as the preview and the test send
 * compile it. Kept while the source is sending; a running send can no longer change.
 */
export type LoadedDesign = CompiledSource;

export type DesignKey = string;

export function designKey(row: SourceColumns): DesignKey {
  const source = sourceOfRow(row);
  return source ? sourceKey(source) : 'none';
}

/** A source's design compiled, with its links registered for tracking (TRACK_CLICKS) under its owner. */
function loadDesign(db: Knex, config: Config, userId: number, source: MessageSource): Promise<LoadedDesign | undefined> {
  return compileSource(db, config, userId, source, { links: 'register' });
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
