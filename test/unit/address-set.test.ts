import { AddressSet } from '../../src/resources/contacts/address-set';

/**
 * The CSV import sizes its AddressSet from a sample of the file (csv-import.service.ts); when
 * the sample was wrong the set grows while the file is read. Growing keeps every answer: the
 * contacts' ids and fingerprints, and the rows that named each address.
 */
describe('AddressSet growing past the size it was made for', () => {
  const email = (i: number) => `Person.${i}@Example.test`;

  function loaded(contacts: number) {
    const set = new AddressSet(contacts).withFingerprints();
    const print = new Int32Array(2);
    for (let i = 0; i < contacts; i += 1) {
      print[0] = i;
      print[1] = 1000 - i;
      set.addContact(email(i), i + 1, print);
    }
    return set;
  }

  it('answers for the contacts it held after new addresses made it grow', () => {
    const set = loaded(1000);
    const before = set.bytes;
    for (let i = 1000; i < 4000; i += 1) expect(set.visit(email(i), i + 2)).toMatchObject({ contactId: 0, previousRow: 0 });
    expect(set.bytes).toBeGreaterThan(before);
    for (let i = 0; i < 1000; i += 1) {
      const v = set.visit(email(i).toLowerCase(), i + 2);
      expect([v.contactId, v.printed, v.print[0], v.print[1]]).toEqual([i + 1, true, i, 1000 - i]);
    }
    expect(set.count).toBe(4000);
    for (let i = 0; i < 4000; i += 1) expect(set.lastRowOf(email(i))).toBe(i + 2);
  });

  it('keeps a row taken as unchanged across growing', () => {
    const set = loaded(1000);
    set.visit(email(7), 9);
    set.markUnchanged();
    for (let i = 1000; i < 4000; i += 1) set.visit(email(i), i + 2);
    expect(set.visit(email(7), 5000)).toMatchObject({ contactId: 0, previousRow: 9, previousUnchanged: true });
  });

  it('lets go of its table when released: small again, and empty', () => {
    const set = loaded(100_000);
    expect(set.bytes).toBeGreaterThan(100_000 * 20);
    set.release();
    expect(set.bytes).toBeLessThan(16 * 1024);
    expect(set.count).toBe(0);
    expect(set.lastRowOf(email(7))).toBe(0);
    expect(set.visit(email(7), 3)).toMatchObject({ contactId: 0, previousRow: 0, printed: false });
  });
});
