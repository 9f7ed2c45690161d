import type { Express } from 'express';
import request from 'supertest';
import type { TestAccount } from '../../helpers/app';

/** Signing in to the dashboard as a browser would, with supertest: the form's token and cookie, then the keys. */
export interface Browserish {
  /** The Cookie header to send (session and time zone). */
  cookie: string;
  csrf: string;
}

/** `name=value` pairs of a response's Set-Cookie headers. */
export function cookiesOf(res: request.Response): Record<string, string> {
  const raw = res.headers['set-cookie'] as unknown as string[] | undefined;
  const out: Record<string, string> = {};
  for (const c of raw ?? []) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    out[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return out;
}

export const formToken = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
export const metaToken = (html: string) => /<meta name="csrf-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

export async function startSignIn(app: Express): Promise<{ cookie: string; token: string }> {
  const page = await request(app).get('/app');
  return { cookie: `herald_sign_in=${cookiesOf(page).herald_sign_in}`, token: formToken(page.text) };
}

export function postSignIn(app: Express, start: { cookie: string; token: string }, publicKey: string, secretKey: string) {
  return request(app).post('/app/sign-in').set('Cookie', start.cookie).type('form').send({ _csrf: start.token, public_key: publicKey, secret_key: secretKey });
}

export async function signIn(app: Express, a: TestAccount, tz?: string): Promise<Browserish> {
  const res = await postSignIn(app, await startSignIn(app), a.public_key, a.secret_key);
  if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  const cookie = `herald_session=${cookiesOf(res).herald_session}${tz ? `; herald_tz=${encodeURIComponent(tz)}` : ''}`;
  const home = await request(app).get('/app').set('Cookie', cookie);
  return { cookie, csrf: metaToken(home.text) };
}
