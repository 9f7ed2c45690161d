import type { Ctx } from '../../context';
import type { Envelope } from '../../http/envelope';
import { forbidden } from '../../http/errors';
import { can, refusedMessage, type Permission } from '../../team/permissions';

/**
 * What the routers' audit entries are made of (issue 37, RouteDef.audit): the answer's fields, a
 * count in words, a URL's host. Summaries name records and count addresses; they never carry an
 * address of a contact (an erasure removes an address everywhere, and the log cannot be edited),
 * a secret, a key, a token or a body.
 */

/** The answer's `message` as an object (empty when it is a confirmation string). */
export function answer(envelope: Envelope): Record<string, unknown> {
  const message = 'message' in envelope ? envelope.message : undefined;
  return message && typeof message === 'object' ? (message as Record<string, unknown>) : {};
}

/** `3 contacts`, `1 contact`. */
export function count(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** Bulk deletes: the count, and the ids (the summary is clipped to its maximum). */
export function bulk(ids: readonly unknown[], one: string, many?: string): { objectId: string | null; summary: string } {
  return { objectId: ids.length === 1 ? String(ids[0]) : null, summary: `${count(ids.length, one, many)}: ${ids.map(String).join(', ')}` };
}

/** A URL's host only (its path or query may carry a token). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/**
 * A second permission a route needs for one form of its input, checked after validation (POST
 * /single/send/create and /update without `draft=1` make a send ready, which sends it:
 * campaigns:send). Nobody acting (the worker) is not checked; the API's keys are the owner.
 */
export function alsoNeeds(ctx: Ctx, permission: Permission): void {
  if (ctx.actor && !can(ctx.actor.role, permission)) throw forbidden(refusedMessage(permission));
}
