import { AppError, nodeUnavailable, unavailable } from './errors';

interface PgLikeError {
  code?: string;
  message?: string;
  constraint?: string;
  column?: string;
  /** PostgreSQL's CONTEXT: Citus names the node whose error it relays there. */
  where?: string;
}

/** Connection-level errors: the database is down, restarting or unreachable. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up / shutting down)
  '53300', // too_many_connections
  '08000',
  '08003',
  '08006',
  '08001',
  '08004',
]);

function isConnectionError(err: PgLikeError): boolean {
  // Class 08, connection exception: every code of it.
  if (err.code && (CONNECTION_CODES.has(err.code) || err.code.startsWith('08'))) return true;
  const m = err.message ?? '';
  return (
    m.includes('Timeout acquiring a connection') ||
    m.includes('Connection terminated') ||
    m.includes('connect ECONNREFUSED') ||
    m.includes('Client has encountered a connection error')
  );
}

/**
 * On Citus, a worker node that cannot be reached: the coordinator answers 08006 "connection to
 * the remote node <user>@<host>:<port> failed with the following error: Connection refused"
 * (or "…: connection not open" for a statement cut off mid-way; seen on the test cluster with a
 * node stopped), and relays a node's own shutdown errors (57P01…) naming the node in CONTEXT
 * ("while executing command on <host>:<port>"). Only that account's node is down: the answer
 * says so, and other accounts keep working.
 */
function isNodeError(err: PgLikeError): boolean {
  // Not anchored: knex puts the statement before the server's message.
  return /connection to the remote node \S+ failed/.test(err.message ?? '') || /while executing command on /.test(err.where ?? '');
}

/**
 * Translates PostgreSQL and driver errors into the envelope's terms, in one place. Services
 * validate before writing, so these are the races and outages that slip past validation.
 */
export function translateDbError(err: unknown): AppError | undefined {
  if (!err || typeof err !== 'object') return undefined;
  const e = err as PgLikeError;
  if (isConnectionError(e)) return isNodeError(e) ? nodeUnavailable() : unavailable();
  switch (e.code) {
    case '23505': // unique_violation: a concurrent insert of the same value won
      return new AppError(422, { [uniqueField(e.constraint)]: [`The ${attr(uniqueField(e.constraint))} has already been taken.`] });
    case '22001': // string_data_right_truncation
      return new AppError(422, 'A value is longer than the field allows.');
    case '22003': // numeric_value_out_of_range
      return new AppError(422, 'A number is out of range.');
    case '22021': // character_not_in_repertoire: text cannot hold a NUL character
    case '22P05': // untranslatable_character: nor can jsonb (\u0000)
      return new AppError(422, 'A value contains a character that cannot be stored (NUL).');
    case '22P02': // invalid_text_representation
    case '22007': // invalid_datetime_format
    case '22008': // datetime_field_overflow
      return new AppError(422, 'A value has an invalid format.');
    case '23503': // foreign_key_violation: the referenced record vanished meanwhile
      return new AppError(422, 'A referenced record does not exist.');
    case '57014': // query_canceled (statement_timeout)
      return new AppError(503, 'The request took too long; try again', { 'Retry-After': '5' });
    case '40001': // serialization_failure
    case '40P01': // deadlock_detected
      return new AppError(503, 'The request conflicted with another; try again', { 'Retry-After': '1' });
    default:
      return undefined;
  }
}

/** Unique indexes are named `<table>_<field>_unique`; the field is what the client sent. */
function uniqueField(constraint?: string): string {
  const m = constraint ? /_([a-z_]+?)_unique$/.exec(constraint) : null;
  const known = ['email_address', 'email', 'field_name', 'name', 'group_name', 'public_key'];
  if (m) {
    const hit = known.find((k) => m[1].endsWith(k));
    if (hit) return hit;
  }
  return 'value';
}

const attr = (field: string) => field.replace(/_/g, ' ');
