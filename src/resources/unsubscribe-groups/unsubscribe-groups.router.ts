import type { RouteDef } from '../../http/routes';

export const unsubscribeGroupRoutes: RouteDef[] = [];
