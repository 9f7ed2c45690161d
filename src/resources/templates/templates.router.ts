import type { RouteDef } from '../../http/routes';

export const templateRoutes: RouteDef[] = [];
