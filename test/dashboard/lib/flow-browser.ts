import fs from 'node:fs';
import type { Browser, BrowserContext, FrameLocator, Locator, Page } from 'playwright-core';
import { loopbackOnly } from '../../helpers/browser';
import { waitFor } from '../../helpers/wait';
import { measureWidth, type Width } from './width';

/**
 * A person's walk through the dashboard in one browser context (test/dashboard/campaign-flow.test.ts):
 * every page it lands on is checked by axe-core (serious and critical findings) and remembered for
 * the phone-width pass; console errors, page errors, failed sub-resources and requests that tried
 * to leave loopback are collected. It finds things by their accessible names (roles, labels,
 * headings), so a page's markup may change under it as long as what a person reads stays.
 */
const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export class FlowBrowser {
  readonly problems: string[] = [];
  /** Pathnames of the pages checked, in the order first seen. */
  readonly seen: string[] = [];
  stopped: string[] = [];

  private constructor(
    readonly context: BrowserContext,
    readonly page: Page,
    readonly base: string,
  ) {}

  static async open(browser: Browser, base: string, timezoneId: string): Promise<FlowBrowser> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId });
    const stopped = await loopbackOnly(context);
    const page = await context.newPage();
    const flow = new FlowBrowser(context, page, base);
    flow.stopped = stopped;
    page.on('console', (m) => {
      // A refused form answers 422 and the browser logs the document's status: that is the page working.
      // A load loopbackOnly stopped is logged as ERR_BLOCKED_BY_CLIENT; it is listed in `stopped`, which the test checks.
      if (m.type() === 'error' && !/status of 422|ERR_BLOCKED_BY_CLIENT/.test(m.text())) flow.problems.push(`console on ${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => flow.problems.push(`page error on ${page.url()}: ${e.message}`));
    page.on('response', (r) => {
      // A script's question the API refuses in its words (422, e.g. a segment's count before its rules are complete) is an answer, not a fault.
      const refusal = r.status() === 422 && r.request().resourceType() === 'fetch';
      if (r.status() >= 400 && r.request().resourceType() !== 'document' && !refusal) flow.problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('dialog', (d) => {
      flow.problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    return flow;
  }

  async close(): Promise<void> {
    await this.context.close();
  }

  get path(): string {
    return new URL(this.page.url()).pathname;
  }

  async goto(path: string): Promise<void> {
    await this.page.goto(`${this.base}${path}`, { waitUntil: 'load' });
  }

  /** Waits for the main frame's next page after `act` (a click that submits a form or follows a link). */
  async navigate(act: () => Promise<void>): Promise<void> {
    const next = this.page.waitForEvent('framenavigated', (f) => f === this.page.mainFrame());
    await act();
    await next;
    await this.page.waitForLoadState('load');
  }

  submit(button: string, within?: Locator): Promise<void> {
    const scope = within ?? this.page;
    return this.navigate(() => scope.getByRole('button', { name: button, exact: true }).click());
  }

  follow(link: string, within?: Locator): Promise<void> {
    const scope = within ?? this.page;
    return this.navigate(() => scope.getByRole('link', { name: link, exact: true }).first().click());
  }

  heading(name: string | RegExp, level = 1): Locator {
    return this.page.getByRole('heading', { level, name });
  }

  /** The page's status message (a `.flash` with role status) that says `text`. */
  status(text: string | RegExp): Locator {
    return this.page.getByRole('status').filter({ hasText: text });
  }

  /** A form control by its accessible name (the label without its required marker). */
  box(name: string, within?: Locator): Locator {
    return (within ?? this.page).getByRole('textbox', { name, exact: true });
  }

  select(name: string, within?: Locator): Locator {
    return (within ?? this.page).getByRole('combobox', { name, exact: true });
  }

  /** The messages shown beside the control named `name` (its aria-describedby list). */
  async messagesBeside(control: Locator): Promise<string[]> {
    const ids = (await control.getAttribute('aria-describedby'))?.split(/\s+/) ?? [];
    const out: string[] = [];
    for (const id of ids) {
      const list = this.page.locator(`[id="${id}"].field-errors li`);
      out.push(...(await list.allInnerTexts()));
    }
    return out;
  }

  async axe(): Promise<string[]> {
    await this.page.evaluate(AXE);
    const result = (await this.page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** This page passes axe-core; remembered for the phone-width pass. */
  async checked(): Promise<void> {
    const path = this.path;
    if (!this.seen.includes(path)) this.seen.push(path);
    const found = await this.axe();
    if (found.length) throw new Error(`axe-core on ${this.page.url()}:\n${found.join('\n')}`);
  }

  async width(): Promise<Width> {
    return measureWidth(this.page);
  }

  /** A frame shown (not hidden) whose title contains `title`. */
  frame(title: string): FrameLocator {
    return this.page.frameLocator(`iframe[title*="${title}"]:visible`);
  }

  /** Reloads the page until `check` holds (the worker does the rest in the background). */
  async reloadUntil(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      what,
      async () => {
        if (await check()) return true;
        await this.page.reload({ waitUntil: 'load' });
        return undefined;
      },
      { timeoutMs, intervalMs: 250, describe: () => this.page.url() },
    );
  }

  /** A section of the page by its heading. */
  region(name: string): Locator {
    return this.page.getByRole('region', { name, exact: true });
  }

  /** Chooses the option of `select` whose text contains `text` (an option's whole label may hold more than a person looks for). */
  async choose(select: Locator, text: string): Promise<void> {
    const value = await select.locator('option', { hasText: text }).first().getAttribute('value');
    if (value === null) throw new Error(`no option with “${text}”`);
    await select.selectOption(value);
  }
}
