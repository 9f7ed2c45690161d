import fc from 'fast-check';
import knexFactory from 'knex';
import { compileRules, OPERATORS, parseRules, type Rule, type RuleField } from '../../src/contacts/segment-rules';

/**
 * The rule compiler without a database: what parseRules accepts and refuses (with Laravel's
 * indexed messages), and the SQL and bindings compileRules produces. Whether that SQL selects
 * the right contacts is tested against PostgreSQL in test/api/segments.test.ts.
 */
const db = knexFactory({ client: 'pg' });
afterAll(() => db.destroy());

const FIELDS: RuleField[] = [
  { id: 3, field_name: 'email', field_type: 'text', is_reserved: 1 },
  { id: 4, field_name: 'alt_email', field_type: 'text', is_reserved: 1 },
  { id: 5, field_name: 'country', field_type: 'text', is_reserved: 1 },
  { id: 1001, field_name: 'plan', field_type: 'text', is_reserved: 0 },
  { id: 1002, field_name: 'score', field_type: 'number', is_reserved: 0 },
  { id: 1003, field_name: 'last_seen', field_type: 'datetime-local', is_reserved: 0 },
];
const byId = new Map(FIELDS.map((f) => [f.id, f]));
const field = (name: string) => FIELDS.find((f) => f.field_name === name)!;

function compiled(rules: Rule[], queryType: string | null = null) {
  const { sql, bindings } = compileRules(db, rules, queryType).toSQL();
  return { sql, bindings };
}

function rulesOf(select: Array<[string, string, string?]>) {
  const parsed = parseRules(
    { select_field: select.map(([f]) => String(field(f).id)), select_operator: select.map(([, o]) => o), value: select.map(([, , v]) => v ?? '') },
    byId,
  );
  if (!('rules' in parsed)) throw new Error(JSON.stringify(parsed.errors));
  return parsed.rules;
}

describe('parseRules', () => {
  it('accepts every operator of each field type, case-insensitively', () => {
    const operand: Record<string, string> = { text: 'x', number: '5', 'datetime-local': '2026-01-02T03:04' };
    for (const f of FIELDS) {
      for (const op of OPERATORS[f.field_type]) {
        const value = op === 'is between' ? (f.field_type === 'number' ? '1,2' : '2026-01-01,2026-02-01') : operand[f.field_type];
        const parsed = parseRules({ select_field: [String(f.id)], select_operator: [op.toUpperCase()], value: [value] }, byId);
        expect({ field: f.field_name, op, ok: 'rules' in parsed }).toEqual({ field: f.field_name, op, ok: true });
      }
    }
  });

  it('names the index of every bad rule, all at once', () => {
    const parsed = parseRules(
      {
        select_field: ['3', '999', '1002', '1003', '1002', '3'],
        select_operator: ['is greater than', 'is', 'is', 'is', 'is between', 'is'],
        value: ['x', 'x', 'seven', '2026-02-30', '1', ''],
      },
      byId,
    );
    expect(parsed).toEqual({
      errors: {
        'select_operator.0': [expect.stringMatching(/^The select operator\.0 must be one of: is, is not, contains/)],
        'select_field.1': ['The selected select field.1 is invalid.'],
        'value.2': ['The value.2 must be a number.'],
        'value.3': ['The value.3 is not a valid date.'],
        'value.4': ['The value.4 must be two values separated by a comma (low,high).'],
        'value.5': ['The value.5 field is required.'],
      },
    });
  });

  it('wants one operator per field', () => {
    expect(parseRules({ select_field: ['3', '3'], select_operator: ['is'], value: ['a', 'b'] }, byId)).toMatchObject({
      errors: { select_operator: ['The select operator must have 2 items, one per select field.'] },
    });
  });

  it('normalises dates to `YYYY-MM-DD HH:MM:SS` and refuses impossible ones', () => {
    expect(rulesOf([['last_seen', 'is after', '2026-03-04']])[0].operands).toEqual(['2026-03-04 00:00:00']);
    expect(rulesOf([['last_seen', 'is after', '2026-03-04T05:06']])[0].operands).toEqual(['2026-03-04 05:06:00']);
    for (const bad of ['2026-13-01', '2025-02-29', '2026-01-01T24:00', 'yesterday']) {
      const parsed = parseRules({ select_field: ['1003'], select_operator: ['is'], value: [bad] }, byId);
      expect(parsed).toEqual({ errors: { 'value.0': ['The value.0 is not a valid date.'] } });
    }
  });
});

describe('compileRules', () => {
  it('binds every operand: no value ever becomes SQL text', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.constantFrom(...OPERATORS.text.filter((o) => !o.startsWith('is '))), (value, op) => {
        fc.pre(value.trim() !== '');
        const { sql, bindings } = compiled(rulesOf([['plan', op, value]]));
        expect(sql).not.toContain(value.trim().length > 2 ? value.trim() : '\u0000');
        expect(bindings.length).toBeGreaterThan(0);
      }),
    );
  });

  it('treats % and _ literally in contains / starts with / ends with', () => {
    expect(compiled(rulesOf([['email', 'contains', '50%_off\\']])).bindings).toEqual(['%50\\%\\_off\\\\%']);
    expect(compiled(rulesOf([['email', 'starts with', 'a_']])).bindings).toEqual(['a\\_%']);
    expect(compiled(rulesOf([['email', 'ends with', '%']])).bindings).toEqual(['%\\%']);
  });

  it('compares text case-insensitively and blank as empty', () => {
    expect(compiled(rulesOf([['email', 'is', 'Ada@Example.com']])).sql).toBe('((lower(c.email) = lower(?)))');
    expect(compiled(rulesOf([['alt_email', 'is empty']])).sql).toBe("((coalesce(c.alt_email, '') = ''))");
  });

  it('reads custom values from custom_fields by id, cast by type', () => {
    expect(compiled(rulesOf([['plan', 'is', 'gold']])).sql).toContain(`lower(coalesce((c.custom_fields ->> '1001'), ''))`);
    expect(compiled(rulesOf([['score', 'is greater than', '7']])).sql).toBe(`(((c.custom_fields ->> '1002')::numeric > ?::numeric))`);
    expect(compiled(rulesOf([['last_seen', 'is before', '2026-01-01']])).sql).toBe(
      `(((c.custom_fields ->> '1003')::timestamp < ?::timestamp))`,
    );
  });

  it('number `is not` includes contacts without a value; `is between` takes its bounds in either order', () => {
    expect(compiled(rulesOf([['score', 'is not', '3']])).sql).toContain('IS DISTINCT FROM ?::numeric');
    const between = compiled(rulesOf([['score', 'is between', '9, 2']]));
    expect(between.sql).toContain('BETWEEN least(?::numeric, ?::numeric) AND greatest(?::numeric, ?::numeric)');
    expect(between.bindings).toEqual(['9', '2', '9', '2']);
  });

  it('datetime `is` compares to the minute', () => {
    expect(compiled(rulesOf([['last_seen', 'is', '2026-01-01T10:30']])).sql).toContain(
      "date_trunc('minute', (c.custom_fields ->> '1003')::timestamp) = date_trunc('minute', ?::timestamp)",
    );
  });

  it('applies a country rule to the country names once, not a lookup per contact', () => {
    const { sql, bindings } = compiled(rulesOf([['country', 'is', 'France']]));
    expect(sql).toContain('c.country_id IN (SELECT rc.id FROM countries rc WHERE lower(rc.name) = lower(?))');
    expect(sql).not.toContain('co.id = c.country_id');
    expect(bindings).toEqual(['France', 'France', 'France']);
  });

  it('joins rules with AND by default and OR when asked; no rules select everyone', () => {
    const two = rulesOf([
      ['email', 'contains', 'a'],
      ['score', 'is less than', '5'],
    ]);
    expect(compiled(two).sql).toMatch(/^\(\(.*\) AND \(.*\)\)$/);
    expect(compiled(two, 'or').sql).toMatch(/^\(\(.*\) OR \(.*\)\)$/);
    expect(compiled([]).sql).toBe('(true)');
  });
});
