import { NOT_FOUND_1, NOT_FOUND_2 } from './envelope';

export type FieldErrors = Record<string, string[]>;

/** Every failure a request can end in: an HTTP status and the envelope's `errors`. */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly errors: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof errors === 'string' ? errors : 'Request failed');
  }
}

/** NF1: `Record Not Found`. */
export const notFound1 = () => new AppError(404, NOT_FOUND_1);
/** NF2: `Record not found`. */
export const notFound2 = () => new AppError(404, NOT_FOUND_2);
export type NotFound = typeof notFound1;

/** VAL: 422 with Laravel-worded messages keyed by field. */
export const invalid = (errors: FieldErrors) => new AppError(422, errors);
/** A refused operation whose reason is a sentence (e.g. set-live without a group). */
export const refused = (text: string) => new AppError(422, text);

export const unauthorized = (errors: unknown) => new AppError(401, errors);
export const forbidden = (text: string) => new AppError(403, text);
export const tooLarge = (text = 'The request body is too large.') => new AppError(413, text);
export const badRequest = (text: string) => new AppError(400, text);
export const routeNotFound = () => new AppError(404, 'Route not found');
export const methodNotAllowed = (allow: string[]) =>
  new AppError(405, 'Method not allowed', { Allow: allow.join(', ') });
export const unavailable = () =>
  new AppError(503, 'Service Unavailable: the database cannot be reached, try again shortly', {
    'Retry-After': '5',
  });
/**
 * On Citus: the node that holds the account's rows cannot be reached (stopped, restarting, cut
 * off); the coordinator and the other nodes answer, so other accounts keep working.
 */
export const nodeUnavailable = () =>
  new AppError(503, 'Service Unavailable: the database node that holds this account’s data cannot be reached, try again shortly', {
    'Retry-After': '5',
  });
export const internal = () => new AppError(500, 'Internal Server Error');
