import type { EspProvider } from '../config';
import { escapeHtml } from '../mail/escape-html';
import { espHeaderWriter } from '../mail/esp-headers';
import { base64Template, headerSafe, messagePiecesWriter, type AsciiBuilder, type MessagePieces } from '../mail/mime';
import { htmlToText } from '../mail/text';
import { RESERVED_COLUMNS } from '../contacts/columns';
import type { DesignParts } from '../sources';
import { withClickPlaceholders } from './links';

/**
 * Rendering: each design is compiled once per send into literal pieces and holes (what each
 * placeholder stands for), and its parts' literal text is encoded to base64 once (mime.ts
 * `base64Template`); each recipient then costs its own values and their encoding.
 * `((name))` is replaced in the subject, preheader, HTML and text; values are HTML-escaped in
 * the HTML; unknown names render empty.
 */
const PLACEHOLDER = /\(\(\s*([A-Za-z0-9_]+)\s*\)\)/g;

type Piece = string | { name: string };

function split(template: string): Piece[] {
  const pieces: Piece[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index! > last) pieces.push(template.slice(last, m.index));
    pieces.push({ name: m[1].toLowerCase() });
    last = m.index! + m[0].length;
  }
  if (last < template.length) pieces.push(template.slice(last));
  return pieces;
}

/** A design's parts (src/sources) and what every source's design shares. */
export interface DesignSource extends Omit<DesignParts, 'userId' | 'owner'> {
  publicUrl: string;
  /** Names of the account's custom fields by id (values are stored by id). */
  customFields: Map<string, string>;
  /** Tracked links (src/render/links.ts): URL → tracked_links id. None: links stay as written. */
  links?: ReadonlyMap<string, number>;
  /** ESP metadata headers each message carries (ESP_METADATA_HEADERS). */
  espMetadataHeaders?: readonly EspProvider[];
}

/** The contact columns a design may name (and nothing else of a recipient row). */
const RESERVED = RESERVED_COLUMNS.filter((c): c is Exclude<(typeof RESERVED_COLUMNS)[number], 'email'> => c !== 'email');
type ReservedName = (typeof RESERVED)[number];
const RESERVED_PLACEHOLDERS = new Set<string>(RESERVED);

export type ContactFields = Readonly<Partial<Record<ReservedName, unknown>>>;

export interface RecipientData {
  email: string;
  /** The To address when the message goes elsewhere than `email` (a test copy); `email` still fills ((email)). */
  to?: string;
  token: string;
  /** Reserved field values by name; nothing else of the object is read. */
  fields: ContactFields;
  /** Custom field values by field id. */
  custom?: Readonly<Record<string, unknown>> | null;
  /** This recipient's URL of a tracked link (its signed /t/click/ address); without it, the link's own URL. */
  clickUrl?: (linkId: number) => string;
}

/** A recipient's message: its subject, and its MIME text in the two pieces the signing reads (`raw` is both). */
export interface RenderedMessage extends MessagePieces {
  subject: string;
  raw: string;
  messageId: string;
}

/** A recipient's subject and parts as text (what a preview shows, or another writer would encode). */
export interface RenderedContent {
  subject: string;
  html: string;
  text: string;
}

const FOOTER = `
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" style="margin-top:24px">
  <tr><td align="center" style="padding:16px;font:12px/1.5 Arial,Helvetica,sans-serif;color:#6b7280">
    ((sender_name)) &middot; ((sender_address))<br>
    <a href="((unsubscribe_preferences))" style="color:#6b7280">Unsubscribe or manage your email preferences</a>
  </td></tr>
</table>`;

/** Adds what every message must carry: the footer (when the design has no unsubscribe link). */
function withFooter(html: string): string {
  if (/\(\(\s*unsubscribe_preferences\s*\)\)/i.test(html)) return html;
  const at = html.search(/<\/body\s*>/i);
  return at < 0 ? html + FOOTER : html.slice(0, at) + FOOTER + html.slice(at);
}

/** Hidden preview text right after <body>, and the 1×1 open pixel right before </body>. */
function withPreheaderAndPixel(html: string): string {
  const preview =
    '<div style="display:none;max-height:0;max-width:0;overflow:hidden;opacity:0;mso-hide:all;font-size:1px;line-height:1px;color:transparent">' +
    '((__preheader))' +
    '&#8199;&#65279;&#847;'.repeat(20) +
    '</div>';
  const pixel = '<img src="((__pixel))" width="1" height="1" alt="" style="display:block;border:0;width:1px;height:1px" />';
  const open = /<body[^>]*>/i.exec(html);
  let out = open ? html.slice(0, open.index + open[0].length) + preview + html.slice(open.index + open[0].length) : preview + html;
  const close = out.search(/<\/body\s*>/i);
  out = close < 0 ? out + pixel : out.slice(0, close) + pixel + out.slice(close);
  return out;
}

export interface CompiledDesign {
  render(r: RecipientData, messageId: string): RenderedMessage;
  content(r: RecipientData): RenderedContent;
}

const CLICK = '__click_';

/**
 * What a placeholder stands for, decided once per design: names the design cannot change
 * (the sender's) become literal text; the others say where a recipient's value comes from.
 */
type Hole =
  | { kind: 'email' | 'fullname' | 'unsubscribe' | 'pixel' | 'preheader' }
  | { kind: 'click'; id: number; url: string }
  | { kind: 'field'; reserved?: ReservedName; custom: string[] };

/** Placeholders whose value comes from the recipient's row alone, by name. */
const SIMPLE_HOLES = new Map<string, 'email' | 'fullname' | 'unsubscribe' | 'pixel' | 'preheader'>([
  ['unsubscribe_preferences', 'unsubscribe'],
  ['email', 'email'],
  ['fullname', 'fullname'],
  ['__pixel', 'pixel'],
  ['__preheader', 'preheader'],
]);

/** Pieces with their placeholders resolved as far as the design allows: literal text, or a hole. */
type Resolved = Array<string | Hole>;

interface DesignContext {
  base: string;
  fromName: string;
  senderAddress: string;
  urlById: Map<number, string>;
  /** Custom field ids by lower-cased name, in the account's order (the last with a value wins). */
  customIds: Map<string, string[]>;
}

/** `escape`: the pieces are HTML, so the sender's name and address go in escaped (values are escaped as they are filled). */
function resolvePieces(pieces: Piece[], ctx: DesignContext, escape: boolean): Resolved {
  const out: Resolved = [];
  const literal = (text: string) => {
    if (typeof out[out.length - 1] === 'string') out[out.length - 1] += text;
    else out.push(text);
  };
  for (const p of pieces) {
    if (typeof p === 'string') {
      literal(p);
      continue;
    }
    switch (p.name) {
      case 'sender_name':
        literal(escape ? escapeHtml(ctx.fromName) : ctx.fromName);
        break;
      case 'sender_address':
        literal(escape ? escapeHtml(ctx.senderAddress) : ctx.senderAddress);
        break;
      default: {
        const simple = SIMPLE_HOLES.get(p.name);
        if (simple) {
          out.push({ kind: simple });
          break;
        }
        const url = p.name.startsWith(CLICK) ? ctx.urlById.get(Number(p.name.slice(CLICK.length))) : undefined;
        if (url !== undefined) out.push({ kind: 'click', id: Number(p.name.slice(CLICK.length)), url });
        else {
          const reserved = RESERVED_PLACEHOLDERS.has(p.name) ? (p.name as ReservedName) : undefined;
          const custom = ctx.customIds.get(p.name) ?? [];
          if (reserved || custom.length) out.push({ kind: 'field', reserved, custom });
        }
      }
    }
  }
  return out;
}

/** One recipient's values of a design's holes. */
class Values {
  private unsubscribeUrl?: string;

  constructor(
    private readonly ctx: DesignContext,
    private readonly r: RecipientData,
    private readonly preheader: Resolved,
  ) {}

  unsubscribe(): string {
    return (this.unsubscribeUrl ??= `${this.ctx.base}/unsubscribe/${this.r.token}`);
  }

  of(hole: Hole): string {
    const r = this.r;
    switch (hole.kind) {
      case 'unsubscribe':
        return this.unsubscribe();
      case 'email':
        return r.email;
      case 'fullname':
        return `${r.fields.first_name ?? ''} ${r.fields.last_name ?? ''}`.trim();
      case 'pixel':
        return `${this.ctx.base}/t/open/${r.token}.gif`;
      case 'preheader':
        return this.text(this.preheader);
      case 'click':
        return r.clickUrl ? r.clickUrl(hole.id) : hole.url;
      case 'field': {
        const v = hole.reserved ? r.fields[hole.reserved] : undefined;
        if (v !== undefined && v !== null) return String(v);
        for (let i = hole.custom.length - 1; i >= 0; i--) {
          const c = r.custom?.[hole.custom[i]];
          if (c !== undefined && c !== null) return String(c);
        }
        return '';
      }
    }
  }

  text(pieces: Resolved): string {
    let out = '';
    for (const p of pieces) out += typeof p === 'string' ? p : this.of(p);
    return out;
  }

  html(pieces: Resolved): string {
    let out = '';
    for (const p of pieces) out += typeof p === 'string' ? p : escapeHtml(this.of(p));
    return out;
  }

  /** The hole values of pieces, in order (HTML-escaped when `escape`). */
  holes(pieces: Resolved, escape: boolean): string[] {
    const out: string[] = [];
    for (const p of pieces) if (typeof p !== 'string') out.push(escape ? escapeHtml(this.of(p)) : this.of(p));
    return out;
  }
}

/** A body part in base64 for a recipient: its literal text encoded once (base64Template). */
function encodedPart(pieces: Resolved, escape: boolean): (values: Values, out: AsciiBuilder) => void {
  const write = base64Template(pieces.map((p) => (typeof p === 'string' ? p : null)));
  return (values, out) => write(values.holes(pieces, escape), out);
}

export function compileDesign(src: DesignSource): CompiledDesign {
  const urlById = new Map([...(src.links ?? [])].map(([url, id]) => [id, url]));
  const customIds = new Map<string, string[]>();
  for (const [id, name] of src.customFields) {
    const key = name.toLowerCase();
    customIds.set(key, [...(customIds.get(key) ?? []), id]);
  }
  const ctx: DesignContext = { base: src.publicUrl, fromName: src.fromName, senderAddress: src.senderAddress, urlById, customIds };
  const html = withFooter(urlById.size ? withClickPlaceholders(src.html, src.publicUrl, src.links!) : src.html);
  // The text part is derived once from the design; placeholders survive as plain text.
  const text = resolvePieces(split(htmlToText(html)), ctx, false);
  const htmlPieces = resolvePieces(split(withPreheaderAndPixel(html)), ctx, true);
  const subject = resolvePieces(split(src.subject), ctx, false);
  // The preheader cannot hold itself (it would never end).
  const preheader = resolvePieces(split(src.preheader), ctx, false).filter((p) => typeof p === 'string' || p.kind !== 'preheader');
  const textPart = encodedPart(text, false);
  const htmlPart = encodedPart(htmlPieces, true);
  const espHeaders = espHeaderWriter(src.espMetadataHeaders ?? []);
  const write = messagePiecesWriter({
    from: { name: src.fromName, email: src.fromEmail },
    replyTo: src.replyTo,
    headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  });

  return {
    render(r, messageId) {
      const values = new Values(ctx, r, preheader);
      const renderedSubject = headerSafe(values.text(subject));
      const list = `<${values.unsubscribe()}>`;
      const { head, body } = write(
        {
          to: { email: r.to ?? r.email },
          subject: renderedSubject,
          messageId,
          headers: espHeaders ? { 'List-Unsubscribe': list, ...espHeaders(r.token) } : { 'List-Unsubscribe': list },
        },
        (out) => textPart(values, out),
        (out) => htmlPart(values, out),
      );
      return { subject: renderedSubject, head, body, raw: `${head}\r\n${body}`, messageId };
    },
    content(r) {
      const values = new Values(ctx, r, preheader);
      return { subject: headerSafe(values.text(subject)), html: values.html(htmlPieces), text: values.text(text) };
    },
  };
}
