import type { RouteDef } from '../http/routes';
import { automationRoutes } from './automations/automations.router';
import { eventRoutes } from './events/events.router';
import { contactTypeRoutes } from './contact-types/contact-types.router';
import { contactRoutes } from './contacts/contacts.router';
import { personRoutes } from './contacts/person.router';
import { designRoutes } from './designs/designs.router';
import { fieldRoutes } from './fields/fields.router';
import { formRoutes } from './forms/forms.router';
import { geographyRoutes } from './geography/geography.router';
import { singleSendRoutes } from './single-sends/single-sends.router';
import { senderRoutes } from './senders/senders.router';
import { segmentRoutes } from './segments/segments.router';
import { notificationRoutes } from './notifications/notifications.router';
import { reportRoutes } from './reports/reports.router';
import { routeRoutes } from './routes/routes.router';
import { templateRoutes } from './templates/templates.router';
import { unsubscribeGroupRoutes } from './unsubscribe-groups/unsubscribe-groups.router';
import { unsubscriberRoutes } from './unsubscribers/unsubscribers.router';
import { suppressionRoutes } from './suppressions/suppressions.router';
import { webhookRoutes } from './webhooks/webhooks.router';
import { userRoutes } from './users/users.router';
import { auditLogRoutes } from './audit-log/audit-log.router';

/** Every API operation, in the spec's order of families. */
export const apiRoutes: RouteDef[] = [
  ...unsubscriberRoutes,
  ...segmentRoutes,
  ...unsubscribeGroupRoutes,
  ...contactTypeRoutes,
  ...contactRoutes,
  ...personRoutes,
  ...fieldRoutes,
  ...formRoutes,
  ...templateRoutes,
  ...designRoutes,
  ...singleSendRoutes,
  ...automationRoutes,
  ...notificationRoutes,
  ...geographyRoutes,
  ...senderRoutes,
  ...eventRoutes,
  ...reportRoutes,
  ...webhookRoutes,
  ...suppressionRoutes,
  ...routeRoutes,
  ...userRoutes,
  ...auditLogRoutes,
];
