import fc from 'fast-check';

/**
 * Arbitraries of hostile input for form fields and query parameters: SQL-looking strings,
 * every kind of Unicode (astral, RTL overrides, NUL, zero-width, lone surrogates), 10,000
 * characters, numbers out of PostgreSQL's integer range, arrays where scalars are expected
 * and the other way round, nested objects, empty values.
 */
export const SQLISH = [
  "' OR '1'='1",
  "'; DROP TABLE contacts; --",
  '1; SELECT pg_sleep(10)--',
  "1' UNION SELECT secret_key_hash FROM accounts--",
  '" OR ""="',
  "\\'",
  '\\',
  '%',
  '_',
  '%_%',
  '$1',
  '?',
  '??',
  ':name',
  '\\N',
  'NULL',
  'null',
  'undefined',
  'true',
  'false',
  '[object Object]',
  '{"$gt": ""}',
  '1e309',
  'NaN',
  'Infinity',
  '-0',
  '0x7fffffff',
  '٣', // Arabic-Indic digit
  '１２３', // full-width digits
  '1.5',
  ' 7 ',
  '+1',
  '00000000001',
  '9007199254740993',
  '-2147483649',
  '99999999999999999999999',
];

export const WEIRD_UNICODE = [
  '\u0000',
  'a\u0000b',
  '\u202Eevil\u202C', // right-to-left override
  'שלום עולם',
  'مرحبا بالعالم',
  '😀👩‍👩‍👧‍👦🏳️‍🌈',
  '𝕳𝖊𝖗𝖆𝖑𝖉 𝟙𝟚𝟛', // astral letters and digits
  '\uFEFFbom',
  'zero\u200Bwidth\u200D',
  'e\u0301\u0301\u0301', // stacked combining marks
  '\uD800', // lone high surrogate
  'x\uDFFFy', // lone low surrogate
  '\r\nBcc: victim@example.com',
  'line\nbreak',
  'cr\ronly',
  '\u2028\u2029',
  '\t tab ',
  '   ',
  ' spaced out ',
  '\u00A0nbsp\u00A0',
  '<script>alert(1)</script>',
  '((first_name))',
  '{{7*7}}',
  '${7*7}',
  '../../etc/passwd',
  'contacts_1',
  'segments_1',
];

export const BIG_NUMBERS = [
  2_147_483_647,
  2_147_483_648,
  -2_147_483_649,
  4_294_967_296,
  Number.MAX_SAFE_INTEGER,
  2 ** 63,
  1e308,
  -1,
  0,
  -0,
  0.5,
  1.0000001,
  Number.MIN_VALUE,
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...SQLISH), weight: 3 },
  { arbitrary: fc.constantFrom(...WEIRD_UNICODE), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
  { arbitrary: fc.constantFrom('x'.repeat(10_000), '𝕏'.repeat(10_000), `${'a'.repeat(9_998)}\r\n`, 'é'.repeat(256)), weight: 1 },
  { arbitrary: fc.constantFrom(...BIG_NUMBERS).map(String), weight: 1 },
  { arbitrary: fc.constant(''), weight: 1 },
);

export const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 6 },
  { arbitrary: fc.constantFrom(...BIG_NUMBERS), weight: 2 },
  { arbitrary: fc.integer(), weight: 1 },
  { arbitrary: fc.double(), weight: 1 },
  { arbitrary: fc.boolean(), weight: 1 },
  { arbitrary: fc.constant(null), weight: 1 },
);

/** Keys a client could put in a nested form value or a JSON object. */
export const hostileKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '0', '1', '999999', 'a[b]', '', ' ', 'strIds', 'id', 'user_id'),
  fc.string({ maxLength: 8 }),
);

/** Anything at all in the place of one field. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: hostileScalar, weight: 8 },
    { arbitrary: fc.array(tie('value'), { maxLength: 4 }), weight: 2 },
    { arbitrary: fc.dictionary(hostileKey, tie('value'), { maxKeys: 3 }), weight: 1 },
    { arbitrary: fc.constantFrom([], {}, [''], [[]], { '': '' }), weight: 1 },
  ),
})).value;
