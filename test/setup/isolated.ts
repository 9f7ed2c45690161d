/**
 * Test files that run the delivery worker get a database of their own: the worker claims
 * every due message in its database, so sharing one with files that create sends would let
 * one file's worker send another's mail. globalSetup migrates and seeds `template` and clones
 * it once per other name (CREATE DATABASE … TEMPLATE, while nothing else is connected).
 */
export const ISOLATED_DATABASES = ['template', 'delivery', 'events', 'unsubscribe', 'automation', 'queue', 'faults', 'workers', 'shutdown', 'fuzz', 'bench', 'webhooks', 'webhook_faults', 'clicks', 'dkim', 'bounces', 'bounce_imap', 'statistics', 'ab', 'ab_faults', 'wake', 'imports', 'settings_ui', 'sends_ui', 'send_tests', 'campaign_flow', 'designs_delivery', 'send_pause', 'signup_flow', 'optin', 'routes_weights', 'routes_quotas', 'routes_failover', 'routes_throttling', 'routes_blocks', 'routes_warmup', 'routes_system', 'routes_pinned', 'routes_kill', 'routes_core'] as const;
export type IsolatedName = (typeof ISOLATED_DATABASES)[number];

export function isolatedUrl(baseUrl: string, name: IsolatedName): string {
  const url = new URL(baseUrl);
  url.pathname = `/${url.pathname.slice(1)}_${name}`;
  return url.toString();
}

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}
