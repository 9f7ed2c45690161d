import type { DashboardKit } from '../respond';
import { page } from '../respond';
import { guarded } from '../permissions';
import { checkSenderAction, deliverabilityPage, liftSuppressionAction } from './deliverability';
import { overviewPage } from './overview';
import { testWebhookAction, webhookPage, webhooksPage } from './webhooks';

/** The overview, deliverability and webhooks (src/dashboard/index.tsx mounts each area), each behind its permission. */
export function mountOverviewAndSettingsPages({ router: r, signedIn, requireCsrf, form }: DashboardKit): void {
  const g = guarded(r, signedIn);
  g.get('/', 'read', page(overviewPage, 'overview'));
  g.get('/deliverability', 'read', page(deliverabilityPage, 'deliverability'));
  g.post('/senders/:id/check', 'settings:manage', form, requireCsrf, page(checkSenderAction, 'deliverability'));
  g.post('/suppressions/lift', 'settings:manage', form, requireCsrf, page(liftSuppressionAction, 'deliverability'));
  g.get('/webhooks', 'read', page(webhooksPage, 'webhooks'));
  g.get('/webhooks/:id', 'read', page(webhookPage, 'webhooks'));
  g.post('/webhooks/:id/test', 'settings:manage', form, requireCsrf, page(testWebhookAction, 'webhooks'));
}
