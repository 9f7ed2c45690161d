import type { Knex } from 'knex';
import { ScheduleType, SendStatus } from '../states';
import { liveSends } from './rows';

/**
 * The dashboard's view of an account's sends (the Sends page and its calendar): a page of them
 * found by name and status, and the sends of a stretch of time. Read-only; one account's rows
 * (index single_sends_user_live_index), never the statistics' open tokens the API's list signs.
 */
export interface BoardSend {
  id: number;
  utr: string;
  single_send_name: string;
  subject: string;
  status: SendStatus;
  schedule_type: number;
  /** When it went or goes out (a timestamp): started (sent_at), due (ready), or a draft's planned time (UTC). */
  at: string | null;
  triggered: number;
  delivered: number;
  unique_opens: number;
}

export interface BoardFilter {
  /** Part of the send's name (case-insensitive). */
  q?: string;
  status?: SendStatus;
}

/** The instant a send is placed at: its start, its due time, or a draft's planned date and time (stored in UTC). */
const AT_SQL = `coalesce(s.sent_at, s.due_at, CASE WHEN s.schedule_type = ${ScheduleType.At} THEN (s.schedule_date + s.schedule_time) AT TIME ZONE 'UTC' END)`;

const COLUMNS = ['s.id', 's.utr', 's.single_send_name', 's.subject', 's.status', 's.schedule_type', 's.triggered', 's.delivered', 's.unique_opens'];

const likeEscape = (v: string) => v.replace(/[\\%_]/g, (ch) => `\\${ch}`);

function filtered(db: Knex, userId: number, filter: BoardFilter): Knex.QueryBuilder {
  const q = liveSends(db, userId);
  if (filter.q) q.whereILike('s.single_send_name', `%${likeEscape(filter.q)}%`);
  if (filter.status !== undefined) q.where('s.status', filter.status);
  return q;
}

/** One page of the account's sends, newest first, and how many match in all. */
export async function boardPage(db: Knex, userId: number, filter: BoardFilter, page: number, perPage: number): Promise<{ rows: BoardSend[]; total: number }> {
  const [rows, total] = await Promise.all([
    filtered(db, userId, filter)
      .select([...COLUMNS, db.raw(`${AT_SQL} AS at`)])
      .orderBy('s.id', 'desc')
      .limit(perPage)
      .offset((page - 1) * perPage),
    filtered(db, userId, filter).count<{ n: string }[]>({ n: '*' }).first(),
  ]);
  return { rows: rows as BoardSend[], total: Number(total?.n ?? 0) };
}

/** The account's sends placed in [from, to) (drafts with a planned time too), in time order. */
export async function boardBetween(db: Knex, userId: number, from: Date, to: Date, limit = 1000): Promise<BoardSend[]> {
  return (await liveSends(db, userId)
    .whereRaw(`${AT_SQL} >= ? AND ${AT_SQL} < ?`, [from, to])
    .select([...COLUMNS, db.raw(`${AT_SQL} AS at`)])
    .orderByRaw(`${AT_SQL}, s.id`)
    .limit(limit)) as BoardSend[];
}
