import type { RouteDef } from '../../http/routes';

export const unsubscriberRoutes: RouteDef[] = [];
