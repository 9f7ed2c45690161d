/**
 * What the block editor knows of the block document (`{"version":1,"settings":{…},"blocks":[…]}`,
 * src/render/design-blocks.ts): each block type's fields as the editor's form shows them, and a new
 * block of each type. The server's schema stays the only judge of a document: the editor writes
 * what is typed (a number field that holds no number is written as typed, so the server names the
 * fault), and keeps every property it has no field for.
 */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

type Choices = Array<[value: string, label: string]>;

export type FieldSpec =
  | { kind: 'text' | 'textarea' | 'url' | 'color'; key: string; label: string; optional?: boolean; hint?: string }
  | { kind: 'number'; key: string; label: string; optional?: boolean; min: number; max: number; hint?: string }
  | { kind: 'select'; key: string; label: string; optional?: boolean; choices: Choices; numeric?: boolean }
  /** A list of strings, one a line. */
  | { kind: 'lines'; key: string; label: string; optional?: boolean; hint?: string }
  /** An object of fields (a link, a button), absent while every field is empty. */
  | { kind: 'object'; key: string; label: string; optional?: boolean; fields: FieldSpec[] }
  /** A list of objects (social links, steps, products, columns). */
  | { kind: 'list'; key: string; label: string; item: string; fields: FieldSpec[]; min: number; max: number; make: () => JsonObject }
  /** The blocks inside a column. */
  | { kind: 'blocks'; key: string; label: string };

const ALIGN: Choices = [
  ['', 'Default'],
  ['left', 'Left'],
  ['center', 'Centre'],
  ['right', 'Right'],
];
const align = (): FieldSpec => ({ kind: 'select', key: 'align', label: 'Alignment', optional: true, choices: ALIGN });
const color = (key: string, label: string): FieldSpec => ({ kind: 'color', key, label, optional: true });
const URL_HINT = 'An http, https or mailto address, or a ((placeholder)).';
const link = (key: string, label: string): FieldSpec => ({
  kind: 'object',
  key,
  label,
  optional: true,
  fields: [
    { kind: 'text', key: 'text', label: 'Link text' },
    { kind: 'url', key: 'href', label: 'Link address', hint: URL_HINT },
  ],
});

const NETWORKS: Choices = [
  ['facebook', 'Facebook'],
  ['instagram', 'Instagram'],
  ['x', 'X'],
  ['twitter', 'Twitter'],
  ['linkedin', 'LinkedIn'],
  ['youtube', 'YouTube'],
  ['tiktok', 'TikTok'],
  ['pinterest', 'Pinterest'],
  ['github', 'GitHub'],
  ['mastodon', 'Mastodon'],
  ['bluesky', 'Bluesky'],
  ['website', 'Website'],
  ['email', 'Email'],
];

export interface BlockType {
  type: string;
  label: string;
  fields: FieldSpec[];
  make: () => JsonObject;
  /** A column may hold it. */
  leaf?: boolean;
  /** The text that names one block of this type in the list (its first words). */
  summary: (b: JsonObject) => string;
}

const str = (v: Json | undefined) => (typeof v === 'string' ? v : '');

const COLUMN_FIELDS: FieldSpec[] = [
  { kind: 'text', key: 'title', label: 'Title', optional: true },
  { kind: 'textarea', key: 'text', label: 'Text', optional: true },
  color('accentColor', 'Accent colour'),
  color('background', 'Background colour'),
  { kind: 'blocks', key: 'blocks', label: 'Blocks in this column' },
];

export const BLOCK_TYPES: BlockType[] = [
  {
    type: 'heading',
    label: 'Heading',
    leaf: true,
    make: () => ({ type: 'heading', level: 2, text: 'A heading' }),
    summary: (b) => str(b.text),
    fields: [
      { kind: 'textarea', key: 'text', label: 'Text' },
      {
        kind: 'select',
        key: 'level',
        label: 'Level',
        optional: true,
        numeric: true,
        choices: [
          ['', 'Default (2)'],
          ['1', '1 (largest)'],
          ['2', '2'],
          ['3', '3 (smallest)'],
        ],
      },
      align(),
      color('color', 'Colour'),
    ],
  },
  {
    type: 'text',
    label: 'Text',
    leaf: true,
    make: () => ({ type: 'text', text: '' }),
    summary: (b) => str(b.text),
    fields: [
      { kind: 'textarea', key: 'text', label: 'Text', hint: 'Plain text: a line break stays a line break; ((placeholders)) are filled per recipient.' },
      {
        kind: 'select',
        key: 'size',
        label: 'Size',
        optional: true,
        choices: [
          ['', 'Default (normal)'],
          ['small', 'Small'],
          ['normal', 'Normal'],
          ['large', 'Large'],
        ],
      },
      align(),
      color('color', 'Colour'),
    ],
  },
  {
    type: 'image',
    label: 'Image',
    leaf: true,
    make: () => ({ type: 'image', src: '', alt: '' }),
    summary: (b) => str(b.alt) || str(b.src),
    fields: [
      { kind: 'url', key: 'src', label: 'Image address', hint: 'The image’s URL (https://…): Herald does not host images.' },
      { kind: 'text', key: 'alt', label: 'Alternative text', hint: 'What the image shows, for readers who do not see it.' },
      { kind: 'url', key: 'href', label: 'Link address', optional: true, hint: URL_HINT },
      { kind: 'number', key: 'width', label: 'Width in pixels', optional: true, min: 16, max: 800 },
      align(),
    ],
  },
  {
    type: 'button',
    label: 'Button',
    leaf: true,
    make: () => ({ type: 'button', text: 'Read more', href: '' }),
    summary: (b) => str(b.text),
    fields: [
      { kind: 'text', key: 'text', label: 'Button text' },
      { kind: 'url', key: 'href', label: 'Link address', hint: URL_HINT },
      align(),
      {
        kind: 'select',
        key: 'style',
        label: 'Style',
        optional: true,
        choices: [
          ['', 'Default (solid)'],
          ['solid', 'Solid'],
          ['outline', 'Outline'],
        ],
      },
      color('background', 'Background colour'),
      color('color', 'Text colour'),
    ],
  },
  {
    type: 'divider',
    label: 'Divider',
    leaf: true,
    make: () => ({ type: 'divider' }),
    summary: () => '',
    fields: [color('color', 'Colour'), { kind: 'number', key: 'thickness', label: 'Thickness in pixels', optional: true, min: 1, max: 10 }],
  },
  {
    type: 'spacer',
    label: 'Spacer',
    leaf: true,
    make: () => ({ type: 'spacer', height: 24 }),
    summary: (b) => (typeof b.height === 'number' ? `${b.height} px` : ''),
    fields: [{ kind: 'number', key: 'height', label: 'Height in pixels', min: 4, max: 200 }],
  },
  {
    type: 'social',
    label: 'Social links',
    leaf: true,
    make: () => ({ type: 'social', links: [{ network: 'website', href: '' }] }),
    summary: (b) => (Array.isArray(b.links) ? b.links.map((l) => str((l as JsonObject)?.network)).join(', ') : ''),
    fields: [
      {
        kind: 'list',
        key: 'links',
        label: 'Links',
        item: 'Link',
        min: 1,
        max: 12,
        make: () => ({ network: 'website', href: '' }),
        fields: [
          { kind: 'select', key: 'network', label: 'Network', choices: NETWORKS },
          { kind: 'url', key: 'href', label: 'Address', hint: URL_HINT },
          { kind: 'text', key: 'text', label: 'Text shown', optional: true, hint: 'The network’s name when empty.' },
        ],
      },
      align(),
      color('color', 'Colour'),
    ],
  },
  {
    type: 'columns',
    label: 'Row of columns',
    make: () => ({ type: 'columns', columns: [{ title: 'First column' }, { title: 'Second column' }] }),
    summary: (b) => (Array.isArray(b.columns) ? `${b.columns.length} columns` : ''),
    fields: [
      { kind: 'list', key: 'columns', label: 'Columns', item: 'Column', min: 1, max: 4, make: () => ({ title: 'A column' }), fields: COLUMN_FIELDS },
      color('background', 'Background colour'),
    ],
  },
  {
    type: 'header',
    label: 'Header',
    make: () => ({ type: 'header', text: '((sender_name))' }),
    summary: (b) => str(b.text),
    fields: [
      { kind: 'text', key: 'text', label: 'Name' },
      { kind: 'text', key: 'tagline', label: 'Tagline', optional: true },
      link('link', 'Link on the right'),
      align(),
      color('background', 'Background colour'),
      color('color', 'Text colour'),
    ],
  },
  {
    type: 'hero',
    label: 'Hero',
    make: () => ({ type: 'hero', title: 'A headline' }),
    summary: (b) => str(b.title) || str(b.headline),
    fields: [
      { kind: 'text', key: 'eyebrow', label: 'Eyebrow', optional: true },
      { kind: 'text', key: 'headline', label: 'Large headline', optional: true },
      { kind: 'text', key: 'title', label: 'Title', optional: true },
      { kind: 'textarea', key: 'text', label: 'Text', optional: true },
      {
        kind: 'object',
        key: 'button',
        label: 'Button',
        optional: true,
        fields: [
          { kind: 'text', key: 'text', label: 'Button text' },
          { kind: 'url', key: 'href', label: 'Link address', hint: URL_HINT },
          color('background', 'Background colour'),
          color('color', 'Text colour'),
        ],
      },
      align(),
      color('background', 'Background colour'),
      color('color', 'Text colour'),
    ],
  },
  {
    type: 'article',
    label: 'Article',
    make: () => ({ type: 'article', title: 'A title' }),
    summary: (b) => str(b.title),
    fields: [
      { kind: 'text', key: 'label', label: 'Label', optional: true },
      { kind: 'text', key: 'title', label: 'Title' },
      { kind: 'textarea', key: 'text', label: 'Text', optional: true },
      link('link', 'Link'),
      color('accentColor', 'Accent colour'),
    ],
  },
  {
    type: 'steps',
    label: 'Steps',
    make: () => ({ type: 'steps', items: [{ title: 'First step' }] }),
    summary: (b) => (Array.isArray(b.items) ? `${b.items.length} steps` : ''),
    fields: [
      {
        kind: 'list',
        key: 'items',
        label: 'Steps',
        item: 'Step',
        min: 1,
        max: 10,
        make: () => ({ title: 'A step' }),
        fields: [
          { kind: 'text', key: 'title', label: 'Title' },
          { kind: 'textarea', key: 'text', label: 'Text', optional: true },
        ],
      },
    ],
  },
  {
    type: 'box',
    label: 'Box',
    make: () => ({ type: 'box', text: '' }),
    summary: (b) => str(b.title) || str(b.text),
    fields: [{ kind: 'text', key: 'title', label: 'Title', optional: true }, { kind: 'textarea', key: 'text', label: 'Text' }, color('background', 'Background colour')],
  },
  {
    type: 'signature',
    label: 'Signature',
    make: () => ({ type: 'signature', lines: ['The team at ((sender_name))'] }),
    summary: (b) => (Array.isArray(b.lines) ? str(b.lines[0]) : ''),
    fields: [{ kind: 'lines', key: 'lines', label: 'Lines', hint: 'One line each.' }],
  },
  {
    type: 'coupon',
    label: 'Coupon',
    make: () => ({ type: 'coupon', code: 'CODE' }),
    summary: (b) => str(b.code),
    fields: [{ kind: 'text', key: 'label', label: 'Label', optional: true }, { kind: 'text', key: 'code', label: 'Code' }, color('color', 'Colour')],
  },
  {
    type: 'products',
    label: 'Products',
    make: () => ({ type: 'products', items: [{ title: 'A product' }] }),
    summary: (b) => (Array.isArray(b.items) ? `${b.items.length} products` : ''),
    fields: [
      {
        kind: 'list',
        key: 'items',
        label: 'Products',
        item: 'Product',
        min: 1,
        max: 6,
        make: () => ({ title: 'A product' }),
        fields: [
          { kind: 'text', key: 'category', label: 'Category', optional: true },
          { kind: 'text', key: 'title', label: 'Title' },
          { kind: 'text', key: 'price', label: 'Price', optional: true },
          { kind: 'text', key: 'salePrice', label: 'Sale price', optional: true },
          { kind: 'url', key: 'image', label: 'Image address', optional: true, hint: URL_HINT },
          color('swatch', 'Swatch colour (without an image)'),
          link('link', 'Link'),
        ],
      },
    ],
  },
  {
    type: 'footer',
    label: 'Footer',
    make: () => ({
      type: 'footer',
      lines: ['((sender_name)) · ((sender_address))'],
      unsubscribe: { text: 'Unsubscribe or manage your preferences', href: '((unsubscribe_preferences))' },
    }),
    summary: (b) => (Array.isArray(b.lines) ? str(b.lines[0]) : ''),
    fields: [
      { kind: 'lines', key: 'lines', label: 'Lines', optional: true, hint: 'One line each: who sends and why, the postal address.' },
      link('unsubscribe', 'Unsubscribe link'),
      color('background', 'Background colour'),
      color('color', 'Text colour'),
    ],
  },
];

export const LEAF_TYPES = BLOCK_TYPES.filter((t) => t.leaf);

export const SETTINGS_FIELDS: FieldSpec[] = [
  { kind: 'number', key: 'width', label: 'Width in pixels', optional: true, min: 320, max: 800, hint: '600 when empty.' },
  color('background', 'Page background'),
  color('contentBackground', 'Content background'),
  { kind: 'text', key: 'fontFamily', label: 'Font', optional: true, hint: 'A list of font names, e.g. Arial, Helvetica, sans-serif.' },
  { kind: 'text', key: 'headingFontFamily', label: 'Heading font', optional: true },
  color('textColor', 'Text colour'),
  color('headingColor', 'Heading colour'),
  color('accentColor', 'Accent colour (links, buttons)'),
];

export const typeOf = (b: Json): BlockType | undefined => BLOCK_TYPES.find((t) => t.type === (b as JsonObject | null)?.type);

export const isObject = (v: Json | undefined): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `value` at `path` of `root`, written immutably; `undefined` removes the key (or the item). */
export function setIn(root: Json, path: Array<string | number>, value: Json | undefined): Json {
  if (path.length === 0) return value === undefined ? null : value;
  const [head, ...rest] = path;
  if (Array.isArray(root) && typeof head === 'number') {
    const copy = [...root];
    const next = rest.length ? setIn(copy[head] ?? {}, rest, value) : value;
    if (next === undefined) copy.splice(head, 1);
    else copy[head] = next;
    return copy;
  }
  const obj: JsonObject = isObject(root) ? { ...root } : {};
  const next = rest.length ? setIn(obj[head] ?? (typeof rest[0] === 'number' ? [] : {}), rest, value) : value;
  if (next === undefined) delete obj[head];
  else obj[head] = next;
  return obj;
}

export function getIn(root: Json | undefined, path: Array<string | number>): Json | undefined {
  let v: Json | undefined = root;
  for (const p of path) {
    if (Array.isArray(v) && typeof p === 'number') v = v[p];
    else if (isObject(v)) v = v[String(p)];
    else return undefined;
  }
  return v;
}

/** The document's key path as the server names it in its messages (`blocks.3.href`). */
export const pathKey = (path: Array<string | number>) => path.join('.');
/** The control's id, as the server's error summary links to it (src/dashboard/form-kit.tsx `fieldId`). */
export const controlId = (path: Array<string | number>) => `field-${pathKey(path).replace(/[^A-Za-z0-9_-]/g, '-')}`;
