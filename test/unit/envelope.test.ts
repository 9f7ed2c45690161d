import { failed, NOT_FOUND_1, NOT_FOUND_2, ok, okInErrors } from '../../src/http/envelope';
import { notFound1, notFound2 } from '../../src/http/errors';
import { toAppError } from '../../src/http/error-handler';

describe('envelope', () => {
  it('shapes success, rule 3 and failure', () => {
    expect(ok('Added Successfully')).toEqual({ status: 'success', message: 'Added Successfully' });
    expect(ok({ contacts: [] })).toEqual({ status: 'success', message: { contacts: [] } });
    expect(okInErrors('Deleted Successfully')).toEqual({ status: 'success', errors: 'Deleted Successfully' });
    expect(failed({ email: ['x'] })).toEqual({ status: 'failed', errors: { email: ['x'] } });
  });

  it('keeps NF1 and NF2 distinct, as the spec does', () => {
    expect(NOT_FOUND_1).toBe('Record Not Found');
    expect(NOT_FOUND_2).toBe('Record not found');
    expect(notFound1()).toMatchObject({ status: 404, errors: 'Record Not Found' });
    expect(notFound2()).toMatchObject({ status: 404, errors: 'Record not found' });
  });
});

describe('toAppError', () => {
  it('maps parser errors to 4xx and everything unknown to a bare 500', () => {
    expect(toAppError({ type: 'entity.parse.failed', status: 400 })).toMatchObject({ status: 400 });
    expect(toAppError({ type: 'entity.too.large', status: 413, limit: 1024 })).toMatchObject({
      status: 413,
      errors: 'The request body must not be greater than 1 kilobytes.',
    });
    expect(toAppError(new Error('Unexpected end of form'))).toMatchObject({ status: 400 });
    const e = toAppError(new Error('secret internals at /src/x.ts:12'));
    expect(e).toMatchObject({ status: 500, errors: 'Internal Server Error' });
  });

  it('maps database outages to 503 and unique races to VAL', () => {
    expect(toAppError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:5432' })).toMatchObject({ status: 503 });
    expect(toAppError(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'))).toMatchObject({
      status: 503,
    });
    expect(toAppError({ code: '57P01' })).toMatchObject({ status: 503 });
    // Any code of class 08 (connection exception), e.g. a protocol violation.
    expect(toAppError({ code: '08P01', message: 'invalid message format' })).toMatchObject({ status: 503, headers: { 'Retry-After': '5' } });
    expect(toAppError({ code: '23505', constraint: 'notification_recipients_email_address_unique' })).toMatchObject({
      status: 422,
      errors: { email_address: ['The email address has already been taken.'] },
    });
  });

  it('maps a Citus worker node that cannot be reached to 503 saying so; the coordinator itself keeps the general wording', () => {
    const node = 'Service Unavailable: the database node that holds this account’s data cannot be reached, try again shortly';
    const database = 'Service Unavailable: the database cannot be reached, try again shortly';
    // As knex reports it: the statement, then the coordinator's error (seen with a node stopped).
    const refused = {
      code: '08006',
      message: 'select * from "contacts" where "user_id" = $1 - connection to the remote node herald@127.0.0.1:9702 failed with the following error: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?',
    };
    expect(toAppError(refused)).toMatchObject({ status: 503, errors: node, headers: { 'Retry-After': '5' } });
    expect(toAppError({ code: '08006', message: 'connection to the remote node herald@127.0.0.1:9702 failed with the following error: connection not open' })).toMatchObject({ status: 503, errors: node });
    // A node's own shutdown, relayed by the coordinator with the node in CONTEXT.
    expect(toAppError({ code: '57P01', message: 'terminating connection due to administrator command', where: 'while executing command on 127.0.0.1:9702' })).toMatchObject({ status: 503, errors: node });
    expect(toAppError({ code: '57P01', message: 'terminating connection due to administrator command' })).toMatchObject({ status: 503, errors: database });
    expect(toAppError({ code: '08006', message: 'server closed the connection unexpectedly' })).toMatchObject({ status: 503, errors: database });
    // The wording alone, without a connection code, is no outage.
    expect(toAppError({ code: '22P02', message: 'invalid input syntax for type integer: "connection to the remote node x failed"' })).toMatchObject({ status: 422 });
  });
});
