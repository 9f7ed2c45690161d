import fs from 'node:fs';
import path from 'node:path';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import multer from 'multer';
import { z } from 'zod';
import { requestActor } from '../consent/actor';
import type { Deps } from '../context';
import { AppError } from '../http/errors';
import { id, uploadedFile } from '../http/fields';
import { validate } from '../http/validate';
import { importContactsCsv } from '../resources/contacts/csv-import.service';
import { listImports } from '../resources/contacts/import-history.service';
import { importResult } from './pages/contacts';
import { errorLines, pageContext } from './respond';
import { auditAction } from './permissions';

/**
 * The contacts page's CSV upload: the same import as POST /contacts/upload-csv, into the same
 * import record, whose progress the page's script polls (GET /app/contacts/imports.json). A
 * script asks for JSON (`Accept: application/json`); a plain form post is sent back to the
 * contacts page, where the import's row shows its result.
 */
export const uploadBody = z.object({ contact_type_id: id(), file: uploadedFile(['csv']) });

/**
 * A form's CSV file (field `file`, at most IMPORT_MAX_BYTES) into a temporary file under the
 * data directory's uploads/, removed when the request ends unless the handler moved it.
 */
export function csvUpload(deps: Deps): RequestHandler {
  const dir = path.join(deps.config.dataDir, 'uploads');
  const upload = multer({
    storage: multer.diskStorage({ destination: (_req, _file, cb) => fs.mkdir(dir, { recursive: true }, (err) => cb(err, dir)) }),
    limits: { fileSize: deps.config.importMaxBytes, files: 1, fields: 10, fieldSize: 4096 },
  }).single('file');
  return (req, res, next) => {
    // The temporary file never outlives the request, whatever the import did with it.
    res.on('close', () => {
      if (req.file?.path) fs.rm(req.file.path, { force: true }, () => undefined);
    });
    upload(req, res, next);
  };
}

export function importUpload(deps: Deps, csrf: RequestHandler): RequestHandler[] {
  const parse = csvUpload(deps);
  const run = async (req: Request, res: Response, next: NextFunction) => {
    const wantsJson = req.accepts(['html', 'json']) === 'json';
    try {
      const body = validate(uploadBody, { ...(req.body as Record<string, unknown>), file: req.file });
      const outcome = await importContactsCsv(pageContext(res).ctx, {
        contactTypeId: body.contact_type_id,
        filePath: body.file.path,
        fileName: body.file.originalname,
        timeoutMs: deps.config.importTimeoutMs,
        actor: requestActor(req).actor,
      });
      await auditAction(pageContext(res), { action: 'contacts.imported', objectKind: 'contact_type', objectId: body.contact_type_id, summary: `CSV import “${body.file.originalname}”: ${outcome.inserted} added, ${outcome.updated} updated, ${outcome.skipped} skipped` });
      if (wantsJson) res.json({ status: 'success', message: { id: outcome.id, inserted: outcome.inserted, updated: outcome.updated, unchanged: outcome.unchanged, skipped: outcome.skipped, result: importResult(outcome) } });
      else res.redirect(303, '/app/contacts#imports');
    } catch (err) {
      if (wantsJson && err instanceof AppError && err.status < 500) res.status(err.status).json({ status: 'failed', errors: errorLines(err.errors) });
      else next(err);
    }
  };
  // The token is read once the form is parsed (a plain form sends it as a field).
  return [parse, csrf, run];
}

/** The newest imports with their progress (what the upload's progress bar follows). */
export async function importProgress(_req: Request, res: Response): Promise<void> {
  const { rows } = await listImports(pageContext(res).ctx, { page: 1, perPage: 5 });
  res.set('Cache-Control', 'no-store').json({
    imports: (rows as Array<Record<string, unknown>>).map((r) => ({
      id: r.id,
      file_name: r.file_name,
      contact_type_id: r.contact_type_id,
      status: r.status,
      file_bytes: r.file_bytes,
      bytes_read: r.bytes_read,
      rows_read: r.rows_read,
      inserted: r.inserted,
      updated: r.updated,
      unchanged: r.unchanged,
      skipped: r.skipped,
      error: r.error,
    })),
  });
}
