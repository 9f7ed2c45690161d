import type { Ctx, Deps } from '../../context';
import { routeViews } from '../../routes/views';
import type { RouteView } from '../../routes/types';

/** The routes the account may use, as the dashboard's Deliverability page shows them too. */
export function listRoutes(ctx: Ctx, deps: Deps): Promise<RouteView[]> {
  return routeViews(ctx.db, deps.config, ctx.userId);
}
