import { trackedUrls, withClickPlaceholders } from '../../src/render/links';

const BASE = 'https://herald.example.com';

describe('links to track (src/render/links.ts)', () => {
  it('finds http(s) hrefs of <a> and <area>, in any quoting and case, with character references decoded', () => {
    const html = `<A HREF="https://a.example/x?p=1&amp;q=2">a</A> <area href='http://b.example/'> <a class="x" href=https://c.example/c>c</a>
      <a href="https://a.example/x?p=1&#38;q=2">same as the first</a> <a href=" https://d.example/ ">spaces</a>`;
    expect(trackedUrls(html, BASE)).toEqual(['https://a.example/x?p=1&q=2', 'http://b.example/', 'https://c.example/c', 'https://d.example/']);
  });

  it('leaves mailto, other schemes, notrack links, placeholders, Herald’s own pages and unparseable URLs alone', () => {
    const html = `<a href="mailto:x@example.com">m</a> <a href="tel:+1">t</a> <a href="javascript:alert(1)">j</a>
      <a data-herald-notrack href="https://n.example/">n</a> <a href="https://p.example/?u=((email))">p</a>
      <a href="((unsubscribe_preferences))">u</a> <a href="${BASE}/unsubscribe/abc">own</a> <a href="https://[bad/">bad</a>
      <link href="https://style.example/s.css"> <img src="https://img.example/i.png">`;
    expect(trackedUrls(html, BASE)).toEqual([]);
  });

  it('replaces each tracked href with its placeholder and keeps everything else byte for byte', () => {
    const html = `<p>x</p><a id="1" href="https://a.example/?a=1&amp;b=2" title="t">A</a><a href='https://b.example/'>B</a><a href="mailto:m@example.com">M</a>`;
    const ids = new Map([
      ['https://a.example/?a=1&b=2', 7],
      ['https://b.example/', 8],
    ]);
    expect(withClickPlaceholders(html, BASE, ids)).toBe(
      `<p>x</p><a id="1" href="((__click_7))" title="t">A</a><a href="((__click_8))">B</a><a href="mailto:m@example.com">M</a>`,
    );
  });
});
