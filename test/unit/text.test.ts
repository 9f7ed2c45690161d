import { htmlToText } from '../../src/mail/text';

describe('htmlToText (the plain-text part of every message)', () => {
  it('writes a link whose text is its address once, and other links with their address', () => {
    const text = htmlToText('<p>Open <a href="https://x.test/verify/abc">https://x.test/verify/abc</a> or <a href="https://x.test/b">this page</a>.</p>');
    expect(text).toBe('Open https://x.test/verify/abc or this page [https://x.test/b].');
  });

  it('keeps the case of headings and drops images', () => {
    expect(htmlToText('<h1>Hello ((first_name))</h1><img src="https://x.test/p.png" alt="pic"><p>Body</p>')).toBe('Hello ((first_name))\n\nBody');
  });
});
