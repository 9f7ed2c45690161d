import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { Fragment, h } from 'preact';
import request from 'supertest';
import { ChoiceList, Heading, pageErrors, PostForm, sendRecipientMessage, sendRecipientPage, Text, TextField } from '../../src/dashboard/recipient';
import { ASSETS_DIR } from '../../src/paths';

/**
 * The recipient page layer (src/dashboard/recipient.tsx): every recipient page leaves through
 * sendRecipientPage, rendered by preact under the strict CSP, styled by a file of this origin.
 */
const HOSTILE = '"><script>alert(1)</script>';

const app = express();
app.get('/page', (_req, res) =>
  sendRecipientPage(res, 200, {
    title: `Title ${HOSTILE}`,
    // (A .test.ts file: the JSX of a page, written with h.)
    body: h(
      Fragment,
      null,
      h(Heading, null, HOSTILE),
      h(Text, null, HOSTILE),
      h(PostForm, {
        action: `/x/${HOSTILE}`,
        children: [
          h(TextField, { name: 'email', type: 'email', label: 'Email', value: HOSTILE, error: 'Enter an address.', required: true }),
          h(ChoiceList, { legend: 'Lists', name: 'list', type: 'radio', choices: [{ value: HOSTILE, label: HOSTILE, hint: HOSTILE }] }),
        ],
      }),
    ),
  }),
);
app.get('/redirecting', (_req, res) => sendRecipientPage(res, 200, { title: 'Form', body: h('p', null, 'x'), formAction: ['https://example.com', 'http://127.0.0.2:8080'] }));
app.get('/scripted', (_req, res) => sendRecipientPage(res, 200, { title: 'Form', body: h('p', null, 'x'), scripts: ['widget.js'] }));
app.get('/message', (_req, res) => sendRecipientMessage(res, 404, 'Not here', 'First line.', 'Second line.'));
app.get(
  '/failing',
  pageErrors(async () => {
    throw new Error('database down');
  }),
);
app.use('/app/assets', express.static(path.join(ASSETS_DIR, 'dashboard')));

describe('sendRecipientPage', () => {
  it('sends an HTML page under the strict CSP: no inline style or script, no script-src at all without scripts', async () => {
    const res = await request(app).get('/page');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    expect(csp.split('; ')).toEqual(["default-src 'none'", "style-src 'self'", "img-src 'self'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"]);
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('is a phone-ready, unindexed document whose only style is its stylesheet, served from this origin', async () => {
    const res = await request(app).get('/page');
    expect(res.text).toMatch(/^<!doctype html><html lang="en">/);
    expect(res.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
    expect(res.text).toContain('<meta name="robots" content="noindex"/>');
    expect(res.text).not.toMatch(/<style|style="/);
    const sheet = /<link rel="stylesheet" href="(\/app\/assets\/recipient\.css\?v=[^"]+)"/.exec(res.text);
    expect(sheet).toBeTruthy();
    const css = await request(app).get(sheet![1]);
    expect(css.status).toBe(200);
    expect(css.text).toContain('.card');
    expect(fs.existsSync(path.join(ASSETS_DIR, 'dashboard', 'recipient.css'))).toBe(true);
  });

  it('writes every value as text or an attribute value, never as markup', async () => {
    const res = await request(app).get('/page');
    expect(res.text.match(/<script/g)).toBeNull();
    expect(res.text).not.toContain(HOSTILE);
    expect(res.text).toContain('<title>Title &quot;>&lt;script>alert(1)&lt;/script></title>');
    expect(res.text).toContain('action="/x/&quot;>&lt;script>alert(1)&lt;/script>"');
    // The field's error is tied to it.
    expect(res.text).toMatch(/<input id="field-email" name="email" type="email" value="[^"]*" required aria-invalid="true" aria-describedby="field-email-error"\/>/);
    expect(res.text).toContain('<p class="error" id="field-email-error">Enter an address.</p>');
  });

  it('adds form-action origins for forms answered by a redirect elsewhere, and script-src only with scripts', async () => {
    const redirecting = String((await request(app).get('/redirecting')).headers['content-security-policy']);
    expect(redirecting).toContain("form-action 'self' https://example.com http://127.0.0.2:8080;");
    expect(redirecting).not.toContain('script-src');
    const scripted = await request(app).get('/scripted');
    expect(String(scripted.headers['content-security-policy'])).toContain("script-src 'self';");
    expect(String(scripted.headers['content-security-policy'])).not.toContain('unsafe-');
    expect(scripted.text).toMatch(/<script type="module" src="\/app\/assets\/widget\.js\?v=[^"]+"><\/script>/);
  });

  it('a message page: the title as heading, a paragraph a line', async () => {
    const res = await request(app).get('/message');
    expect(res.status).toBe(404);
    expect(res.text).toContain('<h1>Not here</h1><p>First line.</p><p>Second line.</p>');
  });

  it('pageErrors: a failing page answers a readable 503 page, not JSON', async () => {
    const res = await request(app).get('/failing');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('Something went wrong');
    expect(res.text).toContain('Please try again in a few minutes.');
  });
});
