import type { Express } from 'express';
import type { Deps } from '../context';
import { mountDesignView } from './design-view';
import { mountInboundEsp } from './inbound-esp';
import { mountMyData } from './my-data';
import { mountSenderVerify } from './sender-verify';
import { mountSubscribe } from './subscribe';
import { mountTracking } from './tracking';
import { mountUnsubscribe } from './unsubscribe';

/**
 * Recipient-facing pages and endpoints without API keys (tracking pixel, unsubscribe,
 * sender verification, design view, ESP webhooks, signup forms and their confirmation). Mounted before the API routes and their 404 fallback.
 */
export type PublicMount = (app: Express, deps: Deps) => void;

export const publicMounts: PublicMount[] = [mountTracking, mountUnsubscribe, mountSenderVerify, mountDesignView, mountInboundEsp, mountSubscribe, mountMyData];

export function mountPublic(app: Express, deps: Deps): void {
  for (const mount of publicMounts) mount(app, deps);
}
