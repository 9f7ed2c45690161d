import type { RouteDef } from '../../http/routes';

export const geographyRoutes: RouteDef[] = [];
