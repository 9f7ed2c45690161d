import { normalizeInput } from '../../src/http/form';

describe('normalizeInput', () => {
  it('folds indexed, empty-bracket and repeated array spellings into arrays', () => {
    expect(normalizeInput({ 'strIds[0]': '4', 'strIds[1]': '5' })).toEqual({ strIds: ['4', '5'] });
    expect(normalizeInput({ 'strIds[1]': 'b', 'strIds[0]': 'a' })).toEqual({ strIds: ['a', 'b'] });
    expect(normalizeInput({ 'strIds[]': ['1', '2'] })).toEqual({ strIds: ['1', '2'] });
    expect(normalizeInput({ strIds: ['1', '2'] })).toEqual({ strIds: ['1', '2'] });
    expect(normalizeInput({ 'recipient_id[0]': 'contacts_1', 'recipient_id[1]': 'segments_2' })).toEqual({
      recipient_id: ['contacts_1', 'segments_2'],
    });
  });

  it('turns qs objects with index keys (past its array limit) into ordered arrays', () => {
    const obj: Record<string, string> = {};
    for (let i = 30; i >= 0; i -= 1) obj[String(i)] = `v${i}`;
    const out = normalizeInput({ strIds: obj }) as { strIds: string[] };
    expect(out.strIds).toHaveLength(31);
    expect(out.strIds[0]).toBe('v0');
    expect(out.strIds[30]).toBe('v30');
  });

  it('trims strings and drops empty ones, as Laravel does', () => {
    expect(normalizeInput({ name: '  Bob  ', empty: '', blank: '   ', n: 3 })).toEqual({ name: 'Bob', n: 3 });
    expect(normalizeInput({ strIds: ['1', '', ' 2 '] })).toEqual({ strIds: ['1', '2'] });
    expect(normalizeInput({ x: null })).toEqual({});
  });

  it('keeps design fields byte for byte', () => {
    const html = '  <p>hi</p>\n';
    expect(normalizeInput({ template_html: html, template_json: ' {} ' })).toEqual({
      template_html: html,
      template_json: ' {} ',
    });
  });

  it('never folds custom field maps into arrays, even with digit names', () => {
    expect(normalizeInput({ custom_field: { '123': 'x', '7': 'y' } })).toEqual({ custom_field: { '123': 'x', '7': 'y' } });
  });

  it('answers {} for anything that is not an object', () => {
    expect(normalizeInput(undefined)).toEqual({});
    expect(normalizeInput('text')).toEqual({});
    expect(normalizeInput([1, 2])).toEqual({});
  });
});
