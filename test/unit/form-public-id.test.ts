import { randomBytes } from 'node:crypto';
import { recipientToken } from '../../src/recipient-token';
import { formPublicId, readFormPublicId } from '../../src/forms/public-id';

/** A form's public id (src/forms/public-id.ts): names its account and form, signed, and nothing else passes. */
describe('form public ids', () => {
  const key = randomBytes(32);
  const ref = { userId: 42, formId: 7 };

  it('reads back the account and form it was made for, in either case', () => {
    const id = formPublicId(key, ref);
    expect(id).toMatch(/^[0-9a-f]{48}$/);
    expect(readFormPublicId(key, id)).toEqual(ref);
    expect(readFormPublicId(key, id.toUpperCase())).toEqual(ref);
    expect(formPublicId(key, { userId: 2_147_483_647, formId: 2_147_483_647 })).toHaveLength(48);
    expect(readFormPublicId(key, formPublicId(key, { userId: 2_147_483_647, formId: 1 }))).toEqual({ userId: 2_147_483_647, formId: 1 });
  });

  it('refuses an id whose account or form was changed (another account’s form, a guessed form)', () => {
    const id = formPublicId(key, ref);
    const otherAccount = (43).toString(16).padStart(8, '0') + id.slice(8);
    const otherForm = id.slice(0, 8) + (8).toString(16).padStart(8, '0') + id.slice(16);
    expect(readFormPublicId(key, otherAccount)).toBeUndefined();
    expect(readFormPublicId(key, otherForm)).toBeUndefined();
  });

  it('refuses a changed MAC, another installation’s key, and malformed ids', () => {
    const id = formPublicId(key, ref);
    const flipped = id.slice(0, -1) + (id.endsWith('0') ? '1' : '0');
    expect(readFormPublicId(key, flipped)).toBeUndefined();
    expect(readFormPublicId(randomBytes(32), id)).toBeUndefined();
    for (const bad of ['', 'x', id.slice(1), `${id}0`, `${id.slice(0, -1)}g`, `../${id}`]) {
      expect(readFormPublicId(key, bad)).toBeUndefined();
    }
    expect(readFormPublicId(key, undefined as unknown as string)).toBeUndefined();
  });

  it('refuses ids naming account or form 0, and tokens signed for another purpose with the same key', () => {
    expect(readFormPublicId(key, formPublicId(key, { userId: 0, formId: 7 }))).toBeUndefined();
    expect(readFormPublicId(key, formPublicId(key, { userId: 42, formId: 0 }))).toBeUndefined();
    // A recipient token's first 48 characters are not a form id.
    expect(readFormPublicId(key, recipientToken(key, { deliveryId: 42, userId: 7 }).slice(0, 48))).toBeUndefined();
  });
});
