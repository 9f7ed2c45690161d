import type { World } from './world';

/**
 * Every page of the dashboard a signed-in account opens (the GET routes of
 * src/dashboard/index.tsx), for one world's records: the tests that visit "every page" (axe,
 * phone width, long values) take this list, so a new page is added here once.
 */
export function dashboardPages(w: World, abSendUtr: string): string[] {
  return [
    '/app',
    `/app/sends/${w.send.utr}`,
    `/app/sends/${w.send.utr}/reports/${w.bounceEventId}`,
    `/app/sends/${abSendUtr}`,
    '/app/sends',
    '/app/sends/calendar',
    '/app/sends/new',
    `/app/sends/${w.send.utr}/preview`,
    `/app/sends/${w.send.utr}/delete`,
    '/app/designs',
    '/app/automations',
    `/app/automations/${w.automation.utr}`,
    '/app/contacts',
    `/app/contacts/${w.contactIds[0]}`,
    `/app/contacts/${w.contactIds[0]}/edit`,
    '/app/lists/new',
    `/app/lists/${w.typeId}`,
    `/app/lists/${w.typeId}?q=example`,
    `/app/lists/${w.typeId}/edit`,
    `/app/lists/${w.typeId}/delete`,
    `/app/lists/${w.typeId}/contacts/new`,
    `/app/segments/new?contact_type_id=${w.typeId}`,
    '/app/senders',
    '/app/senders/new',
    `/app/senders/${w.senderId}/edit`,
    '/app/senders/groups/new',
    '/app/automations/new',
    `/app/automations/${w.automation.utr}/emails/new`,
    `/app/automations/${w.automation.utr}/emails/${w.automation.emails[0].utr}/edit`,
    '/app/deliverability',
    '/app/webhooks',
    `/app/webhooks/${w.webhookId}`,
    '/app/no-such-page',
  ];
}
