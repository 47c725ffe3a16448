// Series discovery (WIRE.md part 3 "Series identity"): which tags the collections a caller can
// see hold, with their labels and last points. What a person or a datasource asks first.

import type { Route } from '../host/plugin.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import type { ShardGateway } from './gateway.js';

const DEFAULT_LIMIT = 1000;
const MAX_LIMIT = 100_000;

const SERIES: JsonSchema = S.object(
  {
    collection: S.string(),
    tag: S.string(),
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    last_ms: { type: ['integer', 'null'] },
    last_value: { type: ['number', 'null'] },
  },
  ['collection', 'tag', 'last_ms', 'last_value'],
);

export function seriesRoutes(gateway: ShardGateway): Route[] {
  return [
    {
      method: 'GET', path: '/svcapi/series', auth: 'jwt', tag: 'Time series',
      summary: 'Series of the collections you can see, with labels and last points',
      description:
        '`collection` (`org/site/unit/grid`, optional: every collection you can see; 404 when it is not one of them), `match` (a glob on the tag name: `*` any run, `?` one character, `\\` makes the next literal; case-sensitive; default `*`), ' +
        `\`limit\` (1..${MAX_LIMIT}, default ${DEFAULT_LIMIT}). Ordered by collection, then tag name. \`total\` counts every match, \`has_more\` says whether the page left some out. ` +
        '`labels` is the series\' label set where it has one (line protocol: `measurement`, `field` and the line\'s other tags; Prometheus remote write: its labels). `last_value` is null when the last point is NaN or ±Inf. Points of /svcapi/write_buffered appear after the next flush.',
      query: S.object({
        collection: S.string({ minLength: 1, maxLength: 1024 }),
        match: S.string({ maxLength: 1024 }),
        limit: S.integer({ minimum: 1, maximum: MAX_LIMIT }),
      }),
      responses: { 200: { description: 'the series', schema: S.object({ series: S.array(SERIES), total: S.integer(), has_more: S.boolean() }, ['series', 'total', 'has_more']) } },
      handler: async (req) => {
        const q = req.query as { collection?: string; match?: string; limit?: number };
        const listing = await gateway.listSeries(req.grant, q.collection ?? null, q.match ?? '*', q.limit ?? DEFAULT_LIMIT);
        // A remote-written series may end on NaN (a stale marker) or ±Inf, which JSON cannot carry: null, as in query results.
        for (const s of listing.series) if (s.last_value !== null && !Number.isFinite(s.last_value)) s.last_value = null;
        return { body: listing };
      },
    },
  ];
}
