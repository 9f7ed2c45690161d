/**
 * What the CSV import knows about addresses while it reads a file: the contact type's
 * existing addresses (with their contact ids) and the addresses the file has named so far
 * (with the CSV line that named them last). It decides where a row goes (straight into
 * contacts, or to the merge) and finds repeated addresses as it reads.
 *
 * An address is kept as a 64-bit hash of its ASCII-lower-cased text in typed arrays (12
 * bytes a slot, ~16 an address), not as a string: a million addresses as JS strings in a
 * Set cost ~80 MB of heap, this ~16 MB. A hash can collide and ASCII lower-casing is not
 * PostgreSQL's lower(), so the answers are a routing hint that PostgreSQL checks (the unique
 * index, the merge; see csv-import.service.ts): a wrong answer costs time, never a wrong
 * contact. At 64 bits a collision among a few million addresses is a ~1-in-10⁶ event.
 *
 * With fingerprints (withFingerprints), each existing contact's slot also holds a 64-bit hash
 * of its values in the file's columns, which tells a row that would change nothing
 * (contact-fingerprint.ts). That answer is not checked again: its text starts with the exact
 * address, so an address collision here cannot pass for an unchanged row.
 */

const EMPTY = 0;
const MAX_LOAD = 0.75;

/** What `visit` found out about the row's address. */
export interface Visit {
  /**
   * The existing contact with this address, when the file names it for the first time (0:
   * none, or named before: the merge then finds the contact by address).
   */
  contactId: number;
  /** The CSV line that named this address before (0: first time in the file). */
  previousRow: number;
  /** With `contactId`: the fingerprint of the contact's values was loaded, in `print` (contact-fingerprint.ts). */
  printed: boolean;
  readonly print: Int32Array;
  /** With `previousRow`: that row was taken as unchanged (markUnchanged) and not staged. */
  previousUnchanged: boolean;
}

/** Int32s a slot: the hash's high word with its lowest bit set (0 = empty), its low word, the value. */
const SLOT = 3;

export class AddressSet {
  /**
   * The slots, interleaved (one cache line a lookup). A value > 0 is an existing contact's id
   * that the file has not named yet; < 0 is minus the CSV line that named the address last.
   */
  private slots: Int32Array;
  private capacity: number;
  private size = 0;
  private hi = 0;
  private lo = 0;
  private readonly visit_: Visit = { contactId: 0, previousRow: 0, printed: false, print: new Int32Array(2), previousUnchanged: false };
  /**
   * With fingerprints (withFingerprints): two Int32s a slot. Before the file names the slot's
   * contact, its fingerprint; after, [1, 0] if that row was unchanged, else [0, 0].
   */
  private prints?: Int32Array;
  /** The slot `visit` last answered for (an index into `slots`). */
  private visited = -1;

  /**
   * Sized for `expectedAddresses` (it grows if need be). Past `maxAddresses` it stops taking
   * new ones (memory stays bounded): an address it did not take is answered as new each time,
   * so a repeat of it reaches PostgreSQL's unique index, which then decides.
   */
  constructor(
    expectedAddresses: number,
    private readonly maxAddresses = Number.MAX_SAFE_INTEGER,
  ) {
    this.capacity = Math.max(1024, Math.ceil(Math.min(expectedAddresses, maxAddresses) / MAX_LOAD) + 1);
    this.slots = new Int32Array(this.capacity * SLOT);
  }

  get count(): number {
    return this.size;
  }

  /** Bytes held by the table (for logs and the benchmark). */
  get bytes(): number {
    return this.slots.byteLength + (this.prints?.byteLength ?? 0);
  }

  /**
   * Lets go of the table once the file is read (the import's merge that follows asks nothing):
   * its memory (~26 MB at 1,000,000 contacts and 600,000 new addresses) goes back at V8's next
   * collection instead of lasting to the import's end. The set is then empty and small.
   */
  release(): void {
    this.capacity = 1024;
    this.slots = new Int32Array(this.capacity * SLOT);
    this.prints = undefined;
    this.size = 0;
    this.visited = -1;
  }

  /** Keeps a fingerprint of each contact's values (contact-fingerprint.ts): 8 bytes more a slot. */
  withFingerprints(): this {
    this.prints ??= new Int32Array(this.capacity * 2);
    return this;
  }

  /** Adds an existing contact's address, with the fingerprint of its values when the set keeps them. */
  addContact(email: string, contactId: number, print?: Int32Array): void {
    const at = this.slotOf(email);
    if (this.slots[at] !== EMPTY || this.size >= this.maxAddresses) return;
    if (this.prints && print) {
      this.prints[(at / SLOT) * 2] = print[0];
      this.prints[(at / SLOT) * 2 + 1] = print[1];
    }
    this.claim(at, contactId);
  }

  /** The row `visit` was last asked about changes nothing on its contact, and was not staged. */
  markUnchanged(): void {
    if (this.prints && this.visited >= 0) this.prints[(this.visited / SLOT) * 2] = 1;
  }

  /**
   * Records that CSV line `row` names `email`, and says what was known before. The answer
   * object is reused by the next call.
   */
  visit(email: string, row: number): Visit {
    let at = this.slotOf(email);
    const v = this.visit_;
    v.printed = false;
    v.previousUnchanged = false;
    if (this.slots[at] === EMPTY) {
      v.contactId = 0;
      v.previousRow = 0;
      if (this.size < this.maxAddresses) at = this.claim(at, -row);
      else at = -1;
      this.visited = at;
      return v;
    }
    const value = this.slots[at + 2];
    v.contactId = value > 0 ? value : 0;
    v.previousRow = value > 0 ? 0 : -value;
    this.slots[at + 2] = -row;
    this.visited = at;
    const prints = this.prints;
    if (prints) {
      const p = (at / SLOT) * 2;
      if (value > 0) {
        v.printed = true;
        v.print[0] = prints[p];
        v.print[1] = prints[p + 1];
      } else {
        v.previousUnchanged = prints[p] === 1;
      }
      prints[p] = 0;
      prints[p + 1] = 0;
    }
    return v;
  }

  /** The CSV line that named `email` last (0: none). */
  lastRowOf(email: string): number {
    const value = this.slots[this.slotOf(email) + 2];
    return value < 0 ? -value : 0;
  }

  /** Takes the empty slot `at`; returns where the address is afterwards (growing moves it). */
  private claim(at: number, value: number): number {
    this.slots[at] = this.hi | 1;
    this.slots[at + 1] = this.lo;
    this.slots[at + 2] = value;
    this.size += 1;
    if (this.size <= this.capacity * MAX_LOAD) return at;
    const [hi, lo] = [this.slots[at], this.slots[at + 1]];
    this.grow();
    return this.find(hi, lo);
  }

  /** The slot holding the hash (hi already with its lowest bit set, lo). */
  private find(fp: number, lo: number): number {
    const end = this.capacity * SLOT;
    let at = ((lo >>> 0) % this.capacity) * SLOT;
    while (!(this.slots[at] === fp && this.slots[at + 1] === lo)) {
      at += SLOT;
      if (at === end) at = 0;
    }
    return at;
  }

  /** Where `email` is, or the empty slot where it belongs (linear probing); sets hi/lo. Returns an index into `slots`. */
  private slotOf(email: string): number {
    this.hash(email);
    const fp = this.hi | 1;
    const lo = this.lo;
    const slots = this.slots;
    const end = this.capacity * SLOT;
    let at = ((lo >>> 0) % this.capacity) * SLOT;
    for (;;) {
      const f = slots[at];
      if (f === EMPTY || (f === fp && slots[at + 1] === lo)) return at;
      at += SLOT;
      if (at === end) at = 0;
    }
  }

  private grow(): void {
    const old = this.slots;
    const oldPrints = this.prints;
    this.capacity *= 2;
    this.slots = new Int32Array(this.capacity * SLOT);
    if (oldPrints) this.prints = new Int32Array(this.capacity * 2);
    const end = this.capacity * SLOT;
    for (let from = 0; from < old.length; from += SLOT) {
      if (old[from] === EMPTY) continue;
      let at = ((old[from + 1] >>> 0) % this.capacity) * SLOT;
      while (this.slots[at] !== EMPTY) {
        at += SLOT;
        if (at === end) at = 0;
      }
      this.slots[at] = old[from];
      this.slots[at + 1] = old[from + 1];
      this.slots[at + 2] = old[from + 2];
      if (oldPrints) {
        this.prints![(at / SLOT) * 2] = oldPrints[(from / SLOT) * 2];
        this.prints![(at / SLOT) * 2 + 1] = oldPrints[(from / SLOT) * 2 + 1];
      }
    }
  }

  /**
   * Two 32-bit lanes over the ASCII-lower-cased UTF-16 code units (cyrb53's mixing), without
   * building the lower-cased string.
   */
  private hash(email: string): void {
    let h1 = 0xdeadbeef;
    let h2 = 0x41c6ce57;
    for (let i = 0; i < email.length; i += 1) {
      let c = email.charCodeAt(i);
      if (c >= 65 && c <= 90) c += 32;
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    this.hi = h1;
    this.lo = h2;
  }
}
