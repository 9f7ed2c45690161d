import { z } from 'zod';
import { AppError } from '../../src/http/errors';
import { email, emailList, flag, id, integer, list, text } from '../../src/http/fields';
import { attributeName, validate } from '../../src/http/validate';

function errorsOf(schema: z.ZodType, input: unknown, opts = {}): unknown {
  try {
    validate(schema, input, opts);
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).status).toBe(422);
    return (e as AppError).errors;
  }
  throw new Error('expected a validation failure');
}

describe('Laravel-worded validation messages', () => {
  it('derives attribute names as Laravel shows them', () => {
    expect(attributeName(['email_address'])).toBe('email address');
    expect(attributeName(['PublicKey'])).toBe('public key');
    expect(attributeName(['strIds', 0])).toBe('str ids.0');
  });

  it('reports every missing field at once', () => {
    const schema = z.object({ group_name: text(), description: text(65535), is_display: flag() });
    expect(errorsOf(schema, {})).toEqual({
      group_name: ['The group name field is required.'],
      description: ['The description field is required.'],
      is_display: ['The is display field is required.'],
    });
  });

  it('words length, email, integer, enum and array rules like Laravel', () => {
    const schema = z.object({
      name: text(255, 2),
      company_address: text(255),
      email: email(),
      sender_id: id(),
      field_type: z.enum(['text', 'number']),
      is_display: flag(),
      strIds: list(z.string()),
    });
    expect(
      errorsOf(schema, {
        name: 'a',
        company_address: 'x'.repeat(256),
        email: 'nope',
        sender_id: 'abc',
        field_type: 'date',
        is_display: 7,
        strIds: [],
      }),
    ).toEqual({
      name: ['The name must be at least 2 characters.'],
      company_address: ['The company address must not be greater than 255 characters.'],
      email: ['The email must be a valid email address.'],
      sender_id: ['The sender id must be an integer.'],
      field_type: ['The selected field type is invalid.'],
      is_display: ['The selected is display is invalid.'],
      strIds: ['The str ids field is required.'],
    });
  });

  it('applies per-route message overrides (the notification owner quirk)', () => {
    const schema = z.object({ email_owner: text() });
    expect(errorsOf(schema, {}, { messages: { 'email_owner.required': 'The name field is required' } })).toEqual({
      email_owner: ['The name field is required'],
    });
  });

  it('coerces form strings to typed values', () => {
    const schema = z.object({ n: integer(), f: flag(), ids: list(id()) });
    expect(validate(schema, { n: '42', f: '1', ids: ['3', 4] })).toEqual({ n: 42, f: 1, ids: [3, 4] });
    expect(validate(z.object({ f: flag() }), { f: true })).toEqual({ f: 1 });
  });

  it('refuses ids outside PostgreSQL integer range', () => {
    expect(errorsOf(z.object({ sender_id: id() }), { sender_id: '99999999999' })).toEqual({
      sender_id: ['The sender id must not be greater than 2147483647.'],
    });
  });
});

describe('email addresses', () => {
  const ok = ['a@example.com', 'first.last+tag@sub.example.co.uk', "o'brien@example.ie", 'x@bücher.de'];
  const bad = ['plain', 'a@b', 'a@@b.com', 'a b@c.com', '.a@b.com', 'a..b@c.com', 'a@b.com\r\nBcc: x@y.com', 'a@-b.com', `${'x'.repeat(65)}@b.com`];
  it.each(ok)('accepts %s', (v) => expect(validate(z.object({ email: email() }), { email: v })).toEqual({ email: v }));
  it.each(bad)('refuses %j', (v) =>
    expect(errorsOf(z.object({ email: email() }), { email: v })).toEqual({ email: ['The email must be a valid email address.'] }),
  );

  it('splits comma-separated lists, deduplicating case-insensitively in order', () => {
    expect(validate(z.object({ email_address: emailList() }), { email_address: 'a@x.com, B@y.org,A@X.COM ; c@z.net' })).toEqual({
      email_address: ['a@x.com', 'B@y.org', 'c@z.net'],
    });
  });

  it('names the first bad address of a list', () => {
    expect(errorsOf(z.object({ email_address: emailList() }), { email_address: 'a@x.com, nope' })).toEqual({
      email_address: ['The email address must be a valid email address ("nope" is not).'],
    });
  });
});
