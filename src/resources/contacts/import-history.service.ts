import type { Ctx } from '../../context';
import { listRows, type Paging } from '../../http/pagination';
import { ImportStatus, importStatus } from '../../states';
import { scoped } from '../shared/crud';

/**
 * The record of each CSV import (`contact_imports`, GET /contacts/imports): opened when an
 * import starts, updated with its progress while it runs, closed with its counts or its
 * error. Written on pooled connections, never in the import's own transaction: the record
 * must be visible while the import runs and must survive its rollback.
 */

/** Running → completed | failed (src/states.ts): only a running record is updated or closed. */
const COMPLETE = importStatus.move(ImportStatus.Running, ImportStatus.Completed);
const FAIL = importStatus.move(ImportStatus.Running, ImportStatus.Failed);

export interface ImportReason {
  row: number;
  reason: string;
}

export interface ImportCounts {
  rowsRead: number;
  inserted: number;
  /** Rows that changed an existing contact. */
  updated: number;
  /** Rows that matched an existing contact whose values they would not change: nothing written. */
  unchanged: number;
  skipped: number;
  reasons: ImportReason[];
  ignoredColumns: string[];
}

export interface ImportProgress {
  rowsRead: number;
  bytesRead: number;
}

const COLUMNS = [
  'id',
  'user_id',
  'contact_type_id',
  'file_name',
  'status',
  'file_bytes',
  'bytes_read',
  'rows_read',
  'inserted',
  'updated',
  'unchanged',
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

/** Records an import that starts now; returns its id. */
export async function openImportRecord(ctx: Ctx, input: { contactTypeId: number; fileName: string; fileBytes: number }): Promise<number> {
  const [row] = await ctx
    .db('contact_imports')
    .insert({
      user_id: ctx.userId,
      contact_type_id: input.contactTypeId,
      file_name: input.fileName.slice(0, 255),
      file_bytes: input.fileBytes,
      status: ImportStatus.Running,
    })
    .returning(['id']);
  return row.id as number;
}

const running = (ctx: Ctx, id: number) => scoped(ctx, 'contact_imports').where({ id, status: ImportStatus.Running });

/**
 * Writes `read()` into the running record every `everyMs`, one update at a time (a tick
 * whose predecessor has not finished is skipped, so a slow database gets no queue of them).
 * `stop()` waits for the update in flight, so none lands after the record is closed.
 */
export function trackImportProgress(ctx: Ctx, id: number, read: () => ImportProgress, everyMs = 1000): { stop(): Promise<void> } {
  let inFlight: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (inFlight) return;
    const { rowsRead, bytesRead } = read();
    inFlight = running(ctx, id)
      .update({ rows_read: rowsRead, bytes_read: bytesRead })
      .catch(() => undefined)
      .finally(() => {
        inFlight = undefined;
      });
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}

export async function completeImportRecord(ctx: Ctx, id: number, counts: ImportCounts & { fileBytes: number; durationMs: number }): Promise<void> {
  await running(ctx, id).update({
    status: COMPLETE.to,
    bytes_read: counts.fileBytes,
    rows_read: counts.rowsRead,
    inserted: counts.inserted,
    updated: counts.updated,
    unchanged: counts.unchanged,
    skipped: counts.skipped,
    reasons: JSON.stringify(counts.reasons),
    ignored_columns: JSON.stringify(counts.ignoredColumns),
    duration_ms: counts.durationMs,
    finished_at: ctx.db.fn.now(),
  });
}

/** Closes the record of an import that wrote nothing; best effort (the import's own error is what the caller reports). */
export async function failImportRecord(
  ctx: Ctx,
  id: number,
  state: { rowsRead: number; skipped: number; reasons: ImportReason[]; error: string; durationMs: number },
): Promise<void> {
  await running(ctx, id)
    .update({
      status: FAIL.to,
      rows_read: state.rowsRead,
      inserted: 0,
      updated: 0,
      unchanged: 0,
      skipped: state.skipped,
      reasons: JSON.stringify(state.reasons),
      error: state.error.slice(0, 1000),
      duration_ms: state.durationMs,
      finished_at: ctx.db.fn.now(),
    })
    .catch(() => undefined);
}
