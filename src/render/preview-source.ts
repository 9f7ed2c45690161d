import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../config';
import { designParts, type MessageSource } from '../sources';
import { registerLinks, trackedUrls } from './links';
import { compileDesign, type CompiledDesign } from './render';
import { customFieldNames } from './sample';

/**
 * The one way a message source (src/sources: a single send, one of its A/B variations, an
 * automation email) becomes a compiled design, for every reader of it: the sender
 * (src/delivery/designs.ts), the preview and the test send (src/resources/single-sends). What
 * they get differs only in the recipient values they fill in (render.ts `RecipientData`), so a
 * preview is what is sent but for its per-recipient tokens.
 */
export interface CompiledSource {
  compiled: CompiledDesign;
  fromEmail: string;
  /** Domain of Message-IDs. */
  domain: string;
  /** Names of the account's custom fields by id (a preview's sample person shows them). */
  customFields: ReadonlyMap<string, string>;
}

export type LinkMode =
  /** The sender's: links are registered for tracking under their owner (TRACK_CLICKS). */
  | 'register'
  /**
   * A preview's or a test's: the same links are tracked in the HTML but registered nowhere
   * (numbered in order), so looking at a draft writes nothing. Their ids are never shown: a
   * preview fills a link's own token, a test its destination.
   */
  | 'unregistered';

type SourceConfig = Pick<Config, 'publicUrl' | 'trackClicks' | 'espMetadataHeaders'>;

/**
 * A source's design compiled; undefined when the source is gone or has no design yet (a draft
 * without a template). `subjectPrefix` goes before the subject (a test's `[Test] `).
 */
export async function compileSource(
  db: Knex,
  config: SourceConfig,
  userId: number,
  source: MessageSource,
  opts: { links: LinkMode; subjectPrefix?: string },
): Promise<CompiledSource | undefined> {
  const parts = await designParts(db, userId, source);
  // A draft's design may be missing (no template, no HTML of its own): nothing to compile.
  if (!parts || parts.html === null || parts.html === undefined) return undefined;
  const { owner, ...design } = parts;
  const urls = config.trackClicks ? trackedUrls(parts.html, config.publicUrl) : [];
  let links: Map<string, number> | undefined;
  if (config.trackClicks) {
    links = opts.links === 'register' ? await registerLinks(db, userId, owner, urls) : new Map(urls.map((u, i) => [u, i + 1]));
  }
  const customFields = await customFieldNames(db, userId);
  return {
    fromEmail: parts.fromEmail,
    domain: parts.fromEmail.split('@')[1] ?? 'localhost',
    customFields,
    compiled: compileDesign({
      ...design,
      subject: (opts.subjectPrefix ?? '') + design.subject,
      publicUrl: config.publicUrl,
      customFields,
      links,
      espMetadataHeaders: config.espMetadataHeaders,
    }),
  };
}

/**
 * A recipient token that names no message (random: no row has it, and its MAC is no key's), of
 * a real one's shape: a preview's or a test message's unsubscribe link, open pixel and
 * Message-ID. Following one finds nothing — a test recipient unsubscribes nobody.
 */
export function unsentToken(): string {
  return randomBytes(28).toString('hex');
}

/** A tracked link's address in a preview: a click token's shape (68 hex), naming nothing. */
export function unsentClickUrl(publicUrl: string): string {
  return `${publicUrl}/t/click/${randomBytes(34).toString('hex')}`;
}
