import type { Page } from 'playwright-core';

/**
 * What makes a page wider than its window: the document's scroll width, and every element or
 * run of text whose right edge is past the window's, unless an ancestor that scrolls or clips
 * sideways (overflow-x auto, scroll, hidden or clip) and itself fits holds it. The page itself
 * (html, body) does not count as such a container: hiding the overflow there would only hide
 * the fault. Also the boxes that do scroll sideways (a table wider than its box), which a value
 * that wraps never needs.
 */
export interface Width {
  view: number;
  scroll: number;
  /** `tag#id.class "text…" right=N` of each thing that sticks out, at most 20. */
  outside: string[];
  /** `tag.class by=N` of each box that scrolls sideways to show what it holds (a table too wide for its box). */
  scrolling: string[];
}

const MEASURE = `(() => {
  const view = document.documentElement.clientWidth;
  const slack = 0.5;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const held = (el) => {
    for (let p = el.parentElement; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
      if (/^(auto|scroll|hidden|clip)$/.test(getComputedStyle(p).overflowX) && p.getBoundingClientRect().right <= view + slack) return true;
    }
    return false;
  };
  const outside = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > view + slack && !held(el)) outside.push(name(el) + ' right=' + Math.round(r.right));
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.textContent.trim()) continue;
    range.selectNodeContents(t);
    const r = range.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > view + slack && !held(t)) outside.push('text in ' + name(t.parentElement) + ' "' + t.textContent.trim().slice(0, 30) + '…" right=' + Math.round(r.right));
  }
  const scrolling = [...document.body.querySelectorAll('*')]
    .filter((el) => /^(auto|scroll)$/.test(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth)
    .map((el) => name(el) + ' by=' + (el.scrollWidth - el.clientWidth));
  return { view, scroll: document.documentElement.scrollWidth, outside: outside.slice(0, 20), scrolling };
})()`;

export function measureWidth(page: Page): Promise<Width> {
  return page.evaluate(MEASURE) as Promise<Width>;
}
