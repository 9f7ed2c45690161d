/**
 * The CSV import reads its file as *byte strings*: JS strings whose characters are the bytes
 * of the UTF-8 file, one each (Buffer's latin1 view). They are one-byte strings whatever the
 * text, so slicing, concatenating and writing them back to bytes (for COPY) costs no decoding
 * and no encoding; only the checks that care about characters decode a value, and only when
 * it is not plain ASCII (where bytes and characters are the same).
 */

const NOT_ASCII = /[\u0080-\uffff]/;

export const isAscii = (s: string): boolean => !NOT_ASCII.test(s);

/** The text a byte string holds. */
export const textOf = (s: string): string => (isAscii(s) ? s : Buffer.from(s, 'latin1').toString('utf8'));

/** The byte string of a text. */
export const bytesOf = (t: string): string => (isAscii(t) ? t : Buffer.from(t, 'utf8').toString('latin1'));

const isAsciiSpace = (c: number) => c === 32 || (c >= 9 && c <= 13);

/**
 * String.prototype.trim on the text a byte string holds: ASCII whitespace is stripped here;
 * an edge that is not ASCII (it may be a no-break or another Unicode space) is decided on the
 * decoded text.
 */
export function trimBytes(s: string): string {
  let start = 0;
  let end = s.length;
  while (start < end && isAsciiSpace(s.charCodeAt(start))) start += 1;
  while (end > start && isAsciiSpace(s.charCodeAt(end - 1))) end -= 1;
  const t = start === 0 && end === s.length ? s : s.slice(start, end);
  if (t.length > 0 && (t.charCodeAt(0) > 0x7f || t.charCodeAt(t.length - 1) > 0x7f)) return bytesOf(textOf(t).trim());
  return t;
}
