import type { RouteDef } from '../http/routes';
import { notificationRoutes } from './notifications/notifications.router';

/** Every API operation, in the spec's order of families. */
export const apiRoutes: RouteDef[] = [...notificationRoutes];
