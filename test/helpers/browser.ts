import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/**
 * The headless Chromium the browser tests drive (Debian's `chromium` package, `.ci/run`
 * installs it): CHROMIUM_PATH when set, otherwise the first Chromium or Chrome on PATH.
 */
const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

function findChromium(): string | undefined {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) return configured;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const name of NAMES) {
      const candidate = path.join(dir, name);
      try {
        fs.accessSync(candidate, fs.constants.X_OK);
        return candidate;
      } catch {
        // not here
      }
    }
  }
  return undefined;
}

export const CHROMIUM = findChromium();

/**
 * `describe` for tests that need the browser. Without one they are skipped with a warning on
 * a developer's machine, but in CI (CI=true) a missing browser fails the run instead of
 * quietly skipping what it was meant to prove.
 */
export function describeBrowser(name: string, fn: () => void): void {
  if (CHROMIUM) {
    describe(`${name} (Chromium at ${CHROMIUM})`, fn);
    return;
  }
  const why = `no Chromium found (set CHROMIUM_PATH or put chromium on PATH; Debian: apt-get install chromium)`;
  if (process.env.CI === 'true') {
    describe(name, () => {
      it('needs a browser', () => {
        throw new Error(`CI=true and ${why}`);
      });
    });
    return;
  }
  console.warn(`Skipping "${name}": ${why}.`);
  describe.skip(name, fn);
}

/** Headless Chromium with the flags this machine's closed network needs (no background fetches). */
export function launchChromium(): Promise<Browser> {
  if (!CHROMIUM) throw new Error('launchChromium() without a browser: use describeBrowser()');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/**
 * Keeps a browser context on loopback: a request to any other host (an email's remote image in a
 * preview, a link followed) is aborted before it leaves the machine. Returns the URLs it stopped.
 */
export async function loopbackOnly(context: import('playwright-core').BrowserContext): Promise<string[]> {
  const stopped: string[] = [];
  await context.route(
    (url) => !(url.protocol === 'data:' || url.protocol === 'about:' || url.protocol === 'blob:' || LOOPBACK_HOSTS.has(url.hostname) || url.hostname.startsWith('127.')),
    (route) => {
      stopped.push(route.request().url());
      void route.abort('blockedbyclient');
    },
  );
  return stopped;
}
