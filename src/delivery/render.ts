import type { EspProvider } from '../config';
import { escapeHtml } from '../mail/escape-html';
import { espHeaderWriter } from '../mail/esp-headers';
import { headerSafe, messageWriter } from '../mail/mime';
import { htmlToText } from '../mail/text';
import { RESERVED_COLUMNS } from '../resources/contacts/contact-columns';
import { withClickPlaceholders } from './links';

/**
 * Rendering: each design is compiled once per send into literal pieces and placeholder
 * names; each recipient then costs a join of strings and a base64 pass (see mime.ts).
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

function fill(pieces: Piece[], values: (name: string) => string, escape: boolean): string {
  let out = '';
  for (const p of pieces) out += typeof p === 'string' ? p : escape ? escapeHtml(values(p.name)) : values(p.name);
  return out;
}

export interface DesignSource {
  subject: string;
  preheader: string;
  html: string;
  fromName: string;
  fromEmail: string;
  replyTo: string;
  senderAddress: string;
  publicUrl: string;
  /** Names of the account's custom fields by id (values are stored by id). */
  customFields: Map<string, string>;
  /** Tracked links (src/delivery/links.ts): URL → tracked_links id. None: links stay as written. */
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
  token: string;
  /** Reserved field values by name; nothing else of the object is read. */
  fields: ContactFields;
  /** Custom field values by field id. */
  custom?: Readonly<Record<string, unknown>> | null;
  /** This recipient's URL of a tracked link (its signed /t/click/ address); without it, the link's own URL. */
  clickUrl?: (linkId: number) => string;
}

export interface RenderedMessage {
  subject: string;
  html: string;
  text: string;
  raw: string;
  messageId: string;
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
}

const CLICK = '__click_';

export function compileDesign(src: DesignSource): CompiledDesign {
  const urlById = new Map([...(src.links ?? [])].map(([url, id]) => [id, url]));
  const html = withFooter(urlById.size ? withClickPlaceholders(src.html, src.publicUrl, src.links!) : src.html);
  // The text part is derived once from the design; placeholders survive as plain text.
  const text = split(htmlToText(html));
  const htmlPieces = split(withPreheaderAndPixel(html));
  const subject = split(src.subject);
  const preheader = split(src.preheader);
  const base = src.publicUrl;
  const espHeaders = espHeaderWriter(src.espMetadataHeaders ?? []);
  const write = messageWriter({
    from: { name: src.fromName, email: src.fromEmail },
    replyTo: src.replyTo,
    headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  });

  return {
    render(r, messageId) {
      const unsubscribeUrl = `${base}/unsubscribe/${r.token}`;
      const custom = r.custom ?? {};
      const byName = new Map<string, string>();
      for (const [id, name] of src.customFields) {
        const v = custom[id];
        if (v !== undefined && v !== null) byName.set(name.toLowerCase(), String(v));
      }
      const values = (name: string): string => {
        switch (name) {
          case 'sender_name':
            return src.fromName;
          case 'sender_address':
            return src.senderAddress;
          case 'unsubscribe_preferences':
            return unsubscribeUrl;
          case 'email':
            return r.email;
          case 'fullname':
            return `${r.fields.first_name ?? ''} ${r.fields.last_name ?? ''}`.trim();
          case '__pixel':
            return `${base}/t/open/${r.token}.gif`;
          case '__preheader':
            return fill(preheader, values, false);
          default: {
            if (name.startsWith(CLICK)) {
              const id = Number(name.slice(CLICK.length));
              const url = urlById.get(id);
              if (url !== undefined) return r.clickUrl ? r.clickUrl(id) : url;
            }
            const v = RESERVED_PLACEHOLDERS.has(name) ? r.fields[name as ReservedName] : undefined;
            if (v !== undefined && v !== null) return String(v);
            return byName.get(name) ?? '';
          }
        }
      };
      const renderedSubject = headerSafe(fill(subject, values, false));
      const renderedHtml = fill(htmlPieces, values, true);
      const renderedText = fill(text, values, false);
      const raw = write({
        to: { email: r.email },
        subject: renderedSubject,
        html: renderedHtml,
        text: renderedText,
        messageId,
        headers: espHeaders
          ? { 'List-Unsubscribe': `<${unsubscribeUrl}>`, ...espHeaders(r.token) }
          : { 'List-Unsubscribe': `<${unsubscribeUrl}>` },
      });
      return { subject: renderedSubject, html: renderedHtml, text: renderedText, raw, messageId };
    },
  };
}
