/**
 * The small readers the report parser is built from: header blocks (RFC 5322 headers, the field
 * groups of RFC 3464 and RFC 5965 bodies), addresses found in free text, enhanced status codes
 * (RFC 3463) and the explanation that goes with them. None of them throws, and every scan is
 * linear in its input: they run on whatever arrived in a bounce mailbox.
 */

/** One field of a header block, its name lower-cased, its folded lines joined with one space. */
export interface Field {
  name: string;
  value: string;
}

/** The longest line a reader looks at; longer ones are cut (headers are 998 octets at most anyway). */
const MAX_LINE = 4000;

export function lines(text: string, max = 5000): string[] {
  const out = text.split(/\r?\n/, max);
  for (let i = 0; i < out.length; i++) if (out[i].length > MAX_LINE) out[i] = out[i].slice(0, MAX_LINE);
  return out;
}

const FIELD = /^([!-9;-~]+)[ \t]*:(.*)$/;

/** The fields of one header block (or of every block in `text`, blank lines ignored). */
export function readFields(text: string): Field[] {
  const fields: Field[] = [];
  for (const line of lines(text)) {
    if (/^[ \t]/.test(line)) {
      const last = fields[fields.length - 1];
      const more = line.trim();
      if (last && more) last.value = last.value ? `${last.value} ${more}` : more;
      continue;
    }
    const m = FIELD.exec(line);
    if (m) fields.push({ name: m[1].toLowerCase(), value: m[2].trim() });
  }
  return fields;
}

/** The text split into blocks at blank lines, each block's fields (RFC 3464 §2.1: a per-message group, then one per recipient). */
export function readBlocks(text: string): Field[][] {
  const blocks: Field[][] = [];
  let current: string[] = [];
  const flush = () => {
    if (current.length) blocks.push(readFields(current.join('\n')));
    current = [];
  };
  for (const line of lines(text, 20000)) {
    if (line.trim() === '') flush();
    else current.push(line);
  }
  flush();
  return blocks.filter((b) => b.length > 0);
}

/** The header block at the start of `text` (leading blank lines skipped), up to the first blank line. */
export function headBlock(text: string): string {
  const start = text.search(/\S/);
  if (start === -1) return '';
  const rest = text.slice(start, start + 256 * 1024);
  const end = rest.search(/\r?\n[ \t]*\r?\n/);
  return end === -1 ? rest : rest.slice(0, end);
}

export function fieldValues(fields: Field[], name: string): string[] {
  return fields.filter((f) => f.name === name).map((f) => f.value);
}

export function fieldValue(fields: Field[], name: string): string | undefined {
  return fields.find((f) => f.name === name)?.value;
}

// --- addresses -------------------------------------------------------------------------------

// atext of RFC 5322 plus the dot; the domain's letters, digits, dots and hyphens.
const LOCAL_CHAR = /[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]/;
const DOMAIN_CHAR = /[A-Za-z0-9.-]/;
const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}$/;

/**
 * Every address in free text, lower-cased, in order, without repeats. Scans outwards from each
 * `@` with bounded steps (a regular expression over a long run of letters without one would cost
 * the square of its length).
 */
export function addressesIn(text: string, limit = 50): string[] {
  const out: string[] = [];
  let at = text.indexOf('@');
  let looked = 0;
  while (at !== -1 && out.length < limit && looked++ < 10000) {
    let s = at;
    while (s > 0 && at - s < 64 && LOCAL_CHAR.test(text[s - 1])) s--;
    let e = at + 1;
    while (e < text.length && e - at <= 255 && DOMAIN_CHAR.test(text[e])) e++;
    const local = text.slice(s, at).replace(/^['=/?.]+/, '').replace(/\.+$/, '');
    const domain = text.slice(at + 1, e).toLowerCase().replace(/[.-]+$/, '');
    if (local && DOMAIN.test(domain)) {
      const address = `${local.toLowerCase()}@${domain}`;
      if (!out.includes(address)) out.push(address);
    }
    at = text.indexOf('@', at + 1);
  }
  return out;
}

/**
 * The address of an RFC 3464 recipient field (`rfc822; user@example.com`, `RFC822; <user@example.com>`,
 * a bare address, `LOCAL; user@localhost`), lower-cased; undefined when the field names none.
 */
export function fieldAddress(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const v = value.slice(0, 1000);
  const semi = v.indexOf(';');
  const typed = semi > 0 && semi < 20 && /^[A-Za-z0-9.-]+$/.test(v.slice(0, semi).trim()) ? v.slice(semi + 1) : v;
  const found = addressesIn(typed, 1)[0];
  if (found) return found;
  // A domain without a dot (user@localhost) is still the address the report names.
  const loose = /([^\s<>"';,()[\]@]+)@([A-Za-z0-9.-]+)/.exec(typed);
  return loose ? `${loose[1]}@${loose[2]}`.toLowerCase() : undefined;
}

// --- status codes ----------------------------------------------------------------------------

const FAILURE_CODE = /(?<![\d.])([45])\.(\d{1,3})\.(\d{1,3})(?![\d.])/;
const SUCCESS_CODE = /(?<![\d.])(2)\.(\d{1,3})\.(\d{1,3})(?![\d.])/;
const BASIC = /(?:^|[\s'"(#:[=<-])([45])([0-5]\d)(?=[\s:-]|$)/m;

const USER_UNKNOWN =
  /user unknown|unknown user|no such (user|mailbox|recipient|address)|does ?n[o']t exist|not exist|recipient (address )?rejected|invalid (recipient|mailbox|address)|mailbox (unavailable|not found)|recipient not found|address (not found|unknown|couldn't be found)|no mailbox|unknown (local[- ]part|recipient|address)|doesn't have an? [\w.-]+ account/i;
const MAILBOX_FULL =
  /mailbox (is )?full|over ?quota|quota (exceeded|limit)|exceed(s|ed)? (the |his |her |their )?(storage|quota)|insufficient (system )?storage|out of (storage|space)|mailbox size limit/i;
const DISABLED = /(mailbox|account|user|address) (is |has been )?(disabled|deactivated|inactive|suspended|locked)/i;
const HOST_UNKNOWN = /host (not found|unknown)|domain (not found|does not exist)|unrout(e)?able|no mx|name service error|host or domain name not found/i;

/**
 * The first enhanced status code in `text`, e.g. `5.1.1` (the code of `550-5.1.1 …`, `(#5.1.1)`): a
 * failure's (4.x.x, 5.x.x) before a success's, which a transcript may show first (`250 2.1.0 Sender ok`).
 */
export function enhancedStatus(text: string): string | null {
  const t = text.slice(0, 20000);
  const m = FAILURE_CODE.exec(t) ?? SUCCESS_CODE.exec(t);
  return m ? `${m[1]}.${Number(m[2])}.${Number(m[3])}` : null;
}

/**
 * The status a diagnostic implies: its enhanced code, else its SMTP reply code's class with the
 * detail its words name (550 "user unknown" → 5.1.1, 554 "mailbox is disabled" → 5.2.1, 452 "mailbox full" → 4.2.2,
 * 550 → 5.0.0);
 * null when it carries no code at all (words alone never make a status).
 */
export function inferStatus(text: string): string | null {
  const enhanced = enhancedStatus(text);
  if (enhanced) return enhanced;
  const m = BASIC.exec(text.slice(0, 20000));
  if (!m) return null;
  const cls = m[1];
  const words = text.slice(0, 4000);
  if (DISABLED.test(words)) return `${cls}.2.1`;
  if (USER_UNKNOWN.test(words)) return `${cls}.1.1`;
  if (MAILBOX_FULL.test(words)) return `${cls}.2.2`;
  if (HOST_UNKNOWN.test(words)) return `${cls}.1.2`;
  return `${cls}.0.0`;
}

/** A status field's code (`5.1.1`, `5.0.0 (permanent failure)`), or its SMTP code's class; null if neither. */
export function statusField(value: string | undefined): string | null {
  if (!value) return null;
  return enhancedStatus(value) ?? inferStatus(value);
}

/** Whitespace collapsed, trimmed, at most `max` characters. */
export function squeeze(text: string, max = 1000): string {
  const s = text.slice(0, max * 4).replace(/\s+/g, ' ').trim();
  return s.length > max ? s.slice(0, max).trimEnd() : s;
}
