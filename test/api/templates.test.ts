import request from 'supertest';
import { RESERVED_FIELDS } from '../../seeds/01_reserved-fields';
import { seed as seedTemplates } from '../../seeds/03_templates';
import { templateRecord, type TemplateRecord } from '../../src/resources/templates/templates.schemas';
import { getTemplate, listTemplates } from '../../src/resources/templates/templates.service';
import { api, expectShape, makeAccount, setupApp, type TestAccount } from '../helpers/app';
import { expectAuthMissing, expectSuccess } from '../helpers/expect';

const { app, db } = setupApp();
let a: TestAccount;
let b: TestAccount;

const RESERVED_NAMES = RESERVED_FIELDS.map((f) => f.field_name);
const SENDER_NAMES = ['sender_name', 'sender_address', 'unsubscribe_preferences'];
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

beforeAll(async () => {
  a = await makeAccount(db);
  b = await makeAccount(db);
});

async function templatesOf(account: TestAccount): Promise<TemplateRecord[]> {
  const res = await api(app, account).get('/get-design/template');
  expectSuccess(res);
  return res.body.message.templates as TemplateRecord[];
}

async function contentsOf(account: TestAccount): Promise<string[]> {
  const res = await api(app, account).get('/get-dynamic/content');
  expectSuccess(res);
  return res.body.message.contents as string[];
}

/** Every user-visible string of an editor document (texts, titles, link targets…). */
const TEXT_KEYS = new Set(['text', 'title', 'tagline', 'label', 'eyebrow', 'headline', 'category', 'code', 'price', 'salePrice', 'href']);
function textsOf(node: unknown, key = ''): string[] {
  if (typeof node === 'string') return TEXT_KEYS.has(key) || key === 'lines' ? [node] : [];
  if (Array.isArray(node)) return node.flatMap((n) => textsOf(n, key));
  if (node && typeof node === 'object') return Object.entries(node).flatMap(([k, v]) => textsOf(v, k));
  return [];
}
const escapeText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const placeholdersOf = (html: string) => [...html.matchAll(/\(\(([^()]*)\)\)/g)].map((m) => m[1]);

describe('GET /get-design/template', () => {
  it('lists the designs by id, Custom (blank) first, each with exactly the spec’s fields', async () => {
    const list = await templatesOf(a);
    for (const t of list) expectShape(templateRecord, t);
    expect(list.map((t) => t.id)).toEqual([...list.map((t) => t.id)].sort((x, y) => x - y));
    expect(list[0]).toMatchObject({ id: 1, template_name: 'Custom', is_blank: 1, preview_image: 'template-custom.png' });
    expect(list.slice(0, 5).map((t) => t.template_name)).toEqual(['Custom', 'Newsletter', 'Welcome', 'Announcement', 'Promotion']);
    // Built-ins have no creation time; updated_at says when the seed last changed them.
    expect(list[0].created_at).toBeNull();
    expect(list[0].updated_at).toEqual(expect.any(String));
  });

  it('offers at least four real designs: responsive email HTML with a footer address and an unsubscribe link', async () => {
    const designs = (await templatesOf(a)).filter((t) => t.is_blank === 0);
    expect(designs.length).toBeGreaterThanOrEqual(4);
    for (const t of designs) {
      expect({ id: t.id, html: t.html_code }).toEqual({ id: t.id, html: expect.stringMatching(/^<!DOCTYPE html>/) });
      expect(t.html_code).toContain('((unsubscribe_preferences))');
      expect(t.html_code).toContain('href="((unsubscribe_preferences))"');
      expect(t.html_code).toContain('((sender_address))');
      expect(t.html_code).toContain('((first_name))');
      expect(t.html_code).toContain('max-width:600px');
      expect(t.html_code).toMatch(/@media only screen and \(max-width: ?\d+px\)/);
      expect(t.html_code).toContain('role="presentation"');
      expect(t.html_code).not.toMatch(/<script/i);
      expect(t.html_code.trimEnd()).toMatch(/<\/html>$/);
    }
  });

  it('uses only placeholders that /get-dynamic/content offers every account', async () => {
    const known = new Set([...RESERVED_NAMES, ...SENDER_NAMES]);
    for (const t of await templatesOf(a)) {
      for (const name of placeholdersOf(t.html_code)) expect({ id: t.id, name, known: known.has(name) }).toEqual({ id: t.id, name, known: true });
    }
  });

  it('has editor JSON (version 1, blocks) consistent with the HTML; Custom’s is empty', async () => {
    const list = await templatesOf(a);
    for (const t of list) {
      const doc = JSON.parse(t.json_code) as { version: number; settings: object; blocks: Array<{ type: string }> };
      expect(doc).toEqual({ version: 1, settings: expect.any(Object), blocks: expect.any(Array) });
      for (const block of doc.blocks) expect(block.type).toEqual(expect.any(String));
      if (t.is_blank) {
        expect(doc.blocks).toEqual([]);
        expect(t.html_code).toMatch(/^<!DOCTYPE html>[\s\S]*<body[\s\S]*<\/html>\s*$/);
        continue;
      }
      const footer = doc.blocks.find((x) => x.type === 'footer') as { unsubscribe?: { href: string } } | undefined;
      expect(footer?.unsubscribe?.href).toBe('((unsubscribe_preferences))');
      const texts = textsOf(doc.blocks);
      expect(texts.length).toBeGreaterThan(5);
      for (const text of texts) expect({ id: t.id, text, inHtml: t.html_code.includes(escapeText(text)) }).toEqual({ id: t.id, text, inHtml: true });
    }
  });

  it('serves every preview image at /images/<preview_image> as a real PNG', async () => {
    for (const t of await templatesOf(a)) {
      const res = await request(app)
        .get(`/images/${t.preview_image}`)
        .buffer(true)
        .parse((r, done) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => done(null, Buffer.concat(chunks)));
        });
      expect({ image: t.preview_image, status: res.status }).toEqual({ image: t.preview_image, status: 200 });
      expect(res.headers['content-type']).toBe('image/png');
      const png = res.body as Buffer;
      expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
      expect(png.length).toBeGreaterThan(2_000);
      expect(png.length).toBeLessThanOrEqual(200 * 1024);
      // IHDR: width and height, big-endian, right after the signature and chunk header.
      const width = png.readUInt32BE(16);
      const height = png.readUInt32BE(20);
      expect(width).toBeGreaterThanOrEqual(300);
      expect(width).toBeLessThanOrEqual(1300);
      expect(height).toBeGreaterThanOrEqual(300);
    }
  });

  it('is the same for every account', async () => {
    expect(await templatesOf(b)).toEqual(await templatesOf(a));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/get-design/template'));
  });

  it('answers NF1 when there are no designs at all', async () => {
    // An empty temporary `templates` shadows the real one (pg_temp comes first on the search
    // path) inside a transaction that is rolled back: nothing else sees or waits for it.
    const trx = await db.transaction();
    try {
      await trx.raw('CREATE TEMP TABLE templates (LIKE public.templates) ON COMMIT DROP');
      await expect(listTemplates({ userId: a.id, db: trx })).rejects.toMatchObject({ status: 404, errors: 'Record Not Found' });
    } finally {
      await trx.rollback();
    }
    expect((await templatesOf(a)).length).toBeGreaterThanOrEqual(5);
  });
});

describe('getTemplate', () => {
  it('returns one design by id, or undefined', async () => {
    const list = await templatesOf(a);
    expect(await getTemplate(db, 2)).toEqual(list.find((t) => t.id === 2));
    expect(await getTemplate(db, 999_999)).toBeUndefined();
  });
});

describe('seeds/03_templates', () => {
  it('is idempotent: a second run changes nothing, not even updated_at', async () => {
    const before = await db('templates').orderBy('id');
    await seedTemplates(db);
    expect(await db('templates').orderBy('id')).toEqual(before);
  });

  it('restores a built-in design that differs from its files and touches updated_at', async () => {
    const original = await getTemplate(db, 3);
    const trx = await db.transaction();
    try {
      await trx('templates').where({ id: 3 }).update({ html_code: '<p>edited</p>', updated_at: '2000-01-01T00:00:00Z' });
      await seedTemplates(trx);
      const restored = await getTemplate(trx, 3);
      expect(restored?.html_code).toBe(original?.html_code);
      expect(restored?.updated_at).not.toBe('2000-01-01T00:00:00.000000Z');
    } finally {
      await trx.rollback();
    }
  });
});

describe('GET /get-dynamic/content', () => {
  let customName: string;

  beforeAll(async () => {
    customName = `loyalty_tier_${a.id}`;
    await db('custom_fields').insert([
      { user_id: a.id, field_name: customName, field_type: 'text' },
      { user_id: a.id, field_name: 'birthday', field_type: 'datetime-local' },
    ]);
  });

  it('lists reserved names, then the account’s custom fields (oldest first), then the sender names', async () => {
    expect(await contentsOf(a)).toEqual([...RESERVED_NAMES, customName, 'birthday', ...SENDER_NAMES]);
  });

  it('never shows another account’s custom fields', async () => {
    const contents = await contentsOf(b);
    expect(contents).not.toContain(customName);
    expect(contents).toEqual([...RESERVED_NAMES, ...SENDER_NAMES]);
  });

  it('lists a custom field named like a sender placeholder only once', async () => {
    await db('custom_fields').insert({ user_id: b.id, field_name: 'sender_name', field_type: 'text' });
    const contents = await contentsOf(b);
    expect(contents.filter((n) => n === 'sender_name')).toHaveLength(1);
    expect(contents).toEqual(expect.arrayContaining(SENDER_NAMES));
  });

  it('answers AUTH without keys', async () => {
    expectAuthMissing(await api(app).get('/get-dynamic/content'));
  });
});
