// Prometheus remote read (WIRE.md part 3): `POST /api/v1/read`, a snappy-compressed protobuf
// ReadRequest; each query's label matchers choose among the series the caller can see (as in
// PromQL, the four scope labels included), and its samples in [start, end] answer as a
// ReadResponse of raw SAMPLES, stale markers kept, so a Prometheus reading the service evaluates
// exactly what is stored.

import type { GrantedRequest as Request, Route } from '../host/plugin.js';
import type { InfluxCredentials } from '../ingest/api.js';
import type { Reply } from '../http/route.js';
import { decodeReadRequest, encodeReadResponse, RESPONSE_TYPE_SAMPLES, type EncodableSeries, type MatcherType } from '../../native-free-codecs/prom-remote.js';
import { snappyCompress, snappyDecompress } from '../../native-free-codecs/snappy.js';
import type { LabelMatcher, MatchType } from './promql/ast.js';
import { PromQLError } from './promql/values.js';
import type { SeriesSource } from './series-source.js';

/** Largest decompressed ReadRequest (a request is a few matchers; this is generous). */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const MATCH_TYPES: Record<MatcherType, MatchType> = { EQ: '=', NEQ: '!=', RE: '=~', NRE: '!~' };

function text(status: number, message: string): Reply {
  return { status, contentType: 'text/plain; charset=utf-8', body: `${message}\n` };
}

export function remoteReadRoute(source: SeriesSource, credentials: InfluxCredentials, maxSamples: number): Route {
  return {
    method: 'POST', path: '/api/v1/read', auth: 'jwt', tag: 'Prometheus', mutates: false,
    summary: 'Prometheus remote read (SAMPLES)',
    description:
      'Body: snappy-compressed protobuf `ReadRequest` (`Content-Encoding: snappy`). Each query\'s matchers choose among the series you can see (labels `__name__`, `organization`, `site`, `unit`, `grid` and the stored labels); ' +
      `the answer is a snappy-compressed \`ReadResponse\` of raw samples in [start, end], stale markers included. At most promql.maxSamples (${maxSamples}) samples in all (else 400). Errors are plain text, as Prometheus answers them.`,
    authenticate: (src) => credentials.authenticate(src),
    rawBody: { contentTypes: ['application/x-protobuf'], description: 'snappy-compressed ReadRequest' },
    responses: { 200: { description: 'snappy-compressed ReadResponse', contentType: 'application/x-protobuf' }, 400: { description: 'a body that does not decode, or too many samples' } },
    handler: async (req: Request): Promise<Reply> => {
      let request;
      try {
        request = decodeReadRequest(snappyDecompress(req.rawBody ?? new Uint8Array(), MAX_REQUEST_BYTES));
      } catch (err) {
        return text(400, `cannot decode the remote read request: ${(err as Error).message}`);
      }
      if (request.acceptedResponseTypes.length > 0 && !request.acceptedResponseTypes.includes(RESPONSE_TYPE_SAMPLES)) {
        return text(400, 'only the SAMPLES response type is served');
      }
      let budget = maxSamples;
      const results: EncodableSeries[][] = [];
      try {
        for (const query of request.queries) {
          const matchers: LabelMatcher[] = query.matchers.map((m) => ({ name: m.name, type: MATCH_TYPES[m.type], value: m.value }));
          const series = await source.match(req.grant, matchers);
          const loaded = await source.samples(series, query.startTimestampMs, query.endTimestampMs, req.signal);
          const answer: EncodableSeries[] = [];
          for (const s of loaded) {
            if (s.ts.length === 0) continue;
            budget -= s.ts.length;
            if (budget < 0) return text(400, `exceeded sample limit (${maxSamples}, promql.maxSamples)`);
            answer.push({ labels: s.labels, timestamps: s.ts, values: s.values });
          }
          results.push(answer);
        }
      } catch (err) {
        if (err instanceof PromQLError) return text(err.errorType === 'bad_data' ? 400 : 422, err.message);
        throw err;
      }
      return {
        status: 200,
        contentType: 'application/x-protobuf',
        headers: { 'content-encoding': 'snappy', 'x-prometheus-remote-read-version': '0.1.0' },
        body: snappyCompress(encodeReadResponse(results)),
      };
    },
  };
}
