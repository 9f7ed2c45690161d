import type { NextFunction, Request, Response } from 'express';
import multer from 'multer';
import type { Logger } from '../logger';
import { failed } from './envelope';
import { AppError, badRequest, internal, tooLarge } from './errors';
import { tooDeep } from './form';
import { translateDbError } from './pg-errors';

interface HttpishError {
  type?: string;
  status?: number;
  statusCode?: number;
  message?: string;
  code?: string;
  field?: string;
  limit?: number;
}

/** body-parser's error types, in the envelope's words. */
function fromBodyParser(e: HttpishError): AppError | undefined {
  switch (e.type) {
    case 'entity.parse.failed':
      return badRequest('The request body is not valid JSON.');
    case 'entity.too.large':
      return tooLarge(
        e.limit
          ? `The request body must not be greater than ${Math.floor(e.limit / 1024)} kilobytes.`
          : 'The request body is too large.',
      );
    case 'parameters.too.many':
      return tooLarge('The request has too many parameters.');
    case 'querystring.parse.rangeError':
      // A urlencoded form whose bracket keys nest deeper than body-parser's `depth` (32, as MAX_NESTING).
      return tooDeep();
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError(415, 'The request body uses an unsupported encoding or charset.');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return badRequest('The request body could not be read.');
    default:
      return undefined;
  }
}

function fromMulter(e: multer.MulterError): AppError {
  const field = e.field ?? 'file';
  switch (e.code) {
    case 'LIMIT_FILE_SIZE':
      return tooLarge(`The ${field} is too large.`);
    case 'LIMIT_FIELD_VALUE':
      return tooLarge(`The ${field.replace(/_/g, ' ')} is too large.`);
    case 'LIMIT_PART_COUNT':
    case 'LIMIT_FIELD_COUNT':
    case 'LIMIT_FIELD_KEY':
      return tooLarge('The request has too many fields.');
    case 'LIMIT_FILE_COUNT':
    case 'LIMIT_UNEXPECTED_FILE':
      return new AppError(422, { [field]: [`The ${field.replace(/_/g, ' ')} field does not accept a file.`] });
    default:
      return badRequest('The multipart body is malformed.');
  }
}

/** Any error → the envelope with its status (docs/decisions.md, "Conventions"); never a stack trace or HTML. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof multer.MulterError) return fromMulter(err);
  const e = (err ?? {}) as HttpishError;
  const parsed = fromBodyParser(e);
  if (parsed) return parsed;
  const db = translateDbError(err);
  if (db) return db;
  // busboy (under multer) reports malformed multipart as plain Errors.
  const msg = e.message ?? '';
  if (/multipart|boundary|unexpected end of form|malformed part header|part terminated/i.test(msg)) {
    return badRequest('The multipart body is malformed.');
  }
  if (err instanceof URIError) return badRequest('The request URL is malformed.');
  const status = e.status ?? e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new AppError(status, status === 413 ? 'The request body is too large.' : 'The request could not be understood.');
  }
  return internal();
}

export function errorHandler(logger: Logger) {
  // express recognises error middleware by its four parameters.
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    const appErr = toAppError(err);
    if (appErr.status >= 500) {
      (req.log ?? logger).error({ err }, 'request failed');
    }
    if (res.headersSent) {
      next(err);
      return;
    }
    for (const [k, v] of Object.entries(appErr.headers)) res.setHeader(k, v);
    res.status(appErr.status).json(failed(appErr.errors));
  };
}
