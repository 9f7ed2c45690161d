import type { Ctx } from '../../context';
import { listRows, type Paging } from '../../http/pagination';
import { scoped } from '../shared/crud';

const COLUMNS = [
  'id',
  'user_id',
  'contact_type_id',
  'file_name',
  'status',
  'rows_read',
  'inserted',
  'updated',
  'skipped',
  'reasons',
  'ignored_columns',
  'error',
  'duration_ms',
  'created_at',
  'finished_at',
];

/** The account's CSV imports, newest first. */
export function listImports(ctx: Ctx, paging?: Paging) {
  const base = scoped(ctx, 'contact_imports');
  return listRows(base.clone().select(COLUMNS).orderBy('id', 'desc'), base, paging);
}
