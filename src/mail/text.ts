import { convert } from 'html-to-text';

/**
 * The plain-text part of every message, derived from its HTML: headings keep their case
 * (html-to-text upper-cases them by default, which would not match values filled in later),
 * images are dropped, tables read as tables, a link whose text is its address is written once.
 */
const OPTIONS = {
  wordwrap: 78,
  selectors: [
    { selector: 'img', format: 'skip' },
    { selector: 'table', format: 'dataTable' },
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((h) => ({ selector: h, options: { uppercase: false } })),
  ],
};

export function htmlToText(html: string): string {
  return convert(html, OPTIONS);
}
