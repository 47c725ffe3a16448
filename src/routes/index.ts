// The route table: every mounted route of the service, in one array.
// Routes the contract lists as not mounted (update_password, /elog/*,
// /dataflow/ems/*) are deliberately absent, so they answer 404.

import type { RouteDef } from '../http/route.js';
import { authRoutes } from './auth.js';
import type { ServiceContext } from './context.js';
import { entityRoutes } from './entities.js';
import { queryRoutes } from './queries.js';
import { tagMappingRoutes } from './tag-mappings.js';
import { timeseriesRoutes } from './timeseries.js';
import { utilityRoutes } from './utility.js';

export function buildRouteTable(ctx: ServiceContext): RouteDef[] {
  const table: RouteDef[] = [];
  table.push(...utilityRoutes(ctx, () => table), ...authRoutes(ctx), ...entityRoutes(ctx, ctx.entities), ...timeseriesRoutes(ctx, ctx.storage), ...queryRoutes(ctx, ctx.storage), ...tagMappingRoutes(ctx, ctx.storage));
  return table;
}
