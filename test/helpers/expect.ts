import type { Response } from 'supertest';
import { NOT_FOUND_1, NOT_FOUND_2 } from '../../src/http/envelope';

export function expectSuccess(res: Response, message?: unknown): void {
  expect({ status: res.status, body: res.body }).toMatchObject({ status: 200, body: { status: 'success' } });
  if (message !== undefined) expect(res.body.message).toEqual(message);
}

/** Spec rule 3: success with the confirmation in `errors`. */
export function expectSuccessInErrors(res: Response, text: string): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'success', errors: text } });
}

export function expectNF1(res: Response): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { status: 'failed', errors: NOT_FOUND_1 } });
}

export function expectNF2(res: Response): void {
  expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { status: 'failed', errors: NOT_FOUND_2 } });
}

/** VAL: 422 and, for each field given, exactly these messages. */
export function expectVal(res: Response, fields: Record<string, string[]>): void {
  expect(res.status).toBe(422);
  expect(res.body.status).toBe('failed');
  for (const [field, msgs] of Object.entries(fields)) expect(res.body.errors[field]).toEqual(msgs);
}

export function expectAuthMissing(res: Response): void {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({
    status: 'failed',
    errors: { PublicKey: ['The public key field is required.'], SecretKey: ['The secret key field is required.'] },
  });
}
