/**
 * The fuzzer's requests for what the OpenAPI document cannot describe (issue 34): bodies in
 * line protocol (`/write`, `/ingest/v2/write`, the 2.x form), Prometheus remote write (snappy
 * protobuf), blob and attachment uploads, generated InfluxQL and PromQL queries, and collector
 * definitions; and a WebSocket session fuzzer for the live data socket (`/svcapi/ws`:
 * malformed JSON, huge frames, unknown ops, subscribe floods), with a control subscription after
 * each session that must still be answered (no wedged hub or shard).
 *
 * bench/fuzz.ts picks these as one more route group, "protocol bodies"; the drafts then take
 * the same mutations as any other request. Only types are imported from fuzz.ts (no cycle).
 */

import { gzipSync } from 'node:zlib';
import WebSocket from 'ws';
import { encodeWriteRequest, type EncodableSeries } from '../native-free-codecs/prom-remote.js';
import { snappyCompress } from '../native-free-codecs/snappy.js';
import { prng } from '../test/support/prng.js';
import type { Draft, FuzzTarget, Gen, Operation, World } from './fuzz.js';

export const PROTOCOL_GROUP = 'protocol bodies';

/** Sub-kinds of the group, each counted in the report's byMutation as `protocol-<kind>`. */
export const PROTOCOL_KINDS = ['line-protocol', 'remote-write', 'influxql', 'promql', 'blob', 'attachment', 'collector'] as const;
type Kind = (typeof PROTOCOL_KINDS)[number];
/** A draft before its operation is known: the builder names the route by method and template. */
type Probe = Draft & { opPath: string };

const MEASUREMENTS = ['cpu', 'temp', 'esc\\ m', 'm,x', 'ü', '', 'a'.repeat(300)];
const FIELDS = ['v', 'value', 'x y', 'f=1', '"q"'];

function lineOf(g: Gen): string {
  const scope = g.scope();
  const tags: string[] = [];
  if (g.chance(0.7)) tags.push(`organization=${scope.organization}`, `site=${scope.site}`, `unit=${scope.unit}`, `grid=${scope.grid}`);
  if (g.chance(0.3)) tags.push(`host=${g.pick(['a', 'b\\,c', 'd\\ e', 'x=y', ''])}`);
  const fields: string[] = [];
  for (let i = g.int(0, 3); i >= 0; i--) {
    const value = g.pick([
      String(g.int(-1000, 1000) / 10), `${g.int(0, 99)}i`, `${g.int(0, 99)}u`, 'true', 'F', '"text"', '1e309', 'NaN', '-0', '"unterminated', '9223372036854775808i', '',
    ]);
    fields.push(`${g.pick(FIELDS)}=${value}`);
  }
  const ts = g.pick([
    '', ` ${g.world.window[0] * 1e6 + g.int(0, 1e6)}`, ` ${g.world.window[1]}`, ' -1', ' 99999999999999999999', ' 1.5', ' abc', ` ${Math.floor(g.world.window[0] / 1000)}`,
  ]);
  const measurement = g.chance(0.85) ? g.pick(['cpu', 'temp', 'flow']) : g.pick(MEASUREMENTS);
  return `${measurement}${tags.length ? `,${tags.join(',')}` : ''} ${fields.join(',')}${ts}`;
}

function lineProtocolDraft(g: Gen, d: Probe): void {
  const path = g.pick(['/write', '/ingest/v2/write', '/ingest/v2/api/v2/write']);
  d.method = 'POST';
  d.pathOverride = null;
  d.opPath = path;
  const clientId = g.chance(0.85) ? g.pick(g.world.ids.clients ?? ['1']) : g.pick(['', '999999', '../x', '%00', 'a b']);
  d.query.push([path.includes('api/v2') ? 'bucket' : 'db', encodeURIComponent(clientId)]);
  if (g.chance(0.6)) d.query.push(['precision', g.pick(['ns', 'us', 'ms', 's', 'm', 'h', 'x', ''])]);
  const lines = Array.from({ length: g.pick([1, 2, 5, 50, 2000]) }, () => lineOf(g));
  let text = lines.join(g.pick(['\n', '\n', '\r\n', '\n\n']));
  if (g.chance(0.1)) text = text.slice(0, g.int(0, text.length)); // cut anywhere
  if (g.chance(0.05)) text = `# comment\n${text}\n`;
  let bytes = Buffer.from(text);
  if (g.chance(0.1)) {
    bytes = g.chance(0.8) ? gzipSync(bytes) : Buffer.concat([gzipSync(bytes).subarray(0, 20), Buffer.from('not gzip')]);
    d.headers['content-encoding'] = 'gzip';
  }
  d.body = { kind: 'bytes', bytes, contentType: 'text/plain; charset=utf-8' };
}

function remoteWriteDraft(g: Gen, d: Probe): void {
  d.method = 'POST';
  d.opPath = '/api/v1/write';
  d.query.push(['db', encodeURIComponent(g.chance(0.9) ? g.pick(g.world.ids.clients ?? ['1']) : String(g.int(1000, 2000)))]);
  const series: EncodableSeries[] = [];
  for (let s = g.int(0, 6); s > 0; s--) {
    const scope = g.scope();
    const labels: Array<[string, string]> = [['__name__', g.pick(['up', 'temp_c', 'flow', '', 'x'.repeat(500)])]];
    if (g.chance(0.7)) labels.push(['organization', scope.organization], ['site', scope.site], ['unit', scope.unit], ['grid', scope.grid]);
    if (g.chance(0.3)) labels.push(['job', g.pick(['node', 'a"b', 'new\nline', ''])]);
    if (g.chance(0.05)) labels.push(['job', 'twice']);
    if (g.chance(0.02)) for (let i = 0; i < 300; i++) labels.push([`l${i}`, 'v']);
    labels.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const n = g.pick([0, 1, 5, 100]);
    const timestamps = Array.from({ length: n }, (_, i) => g.world.window[0] + i * 15_000 + (g.chance(0.05) ? -1e15 : 0));
    const values = Float64Array.from({ length: n }, () => g.pick([g.r() * 100, NaN, Infinity, -0, 1e308]));
    series.push({ labels, timestamps, values });
  }
  let bytes = Buffer.from(snappyCompress(encodeWriteRequest(series)));
  if (g.chance(0.15)) bytes = Buffer.from(encodeWriteRequest(series)); // not compressed
  if (g.chance(0.1)) bytes = bytes.subarray(0, g.int(0, bytes.length)); // truncated
  if (g.chance(0.05)) bytes = Buffer.concat([bytes, Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f])]);
  d.headers['content-encoding'] = g.chance(0.9) ? 'snappy' : g.pick(['gzip', 'identity', 'br']);
  if (g.chance(0.9)) d.headers['x-prometheus-remote-write-version'] = '0.1.0';
  d.body = { kind: 'bytes', bytes, contentType: 'application/x-protobuf' };
}

const INFLUX_SELECTS = [
  'SELECT * FROM cpu',
  'SELECT mean(v) FROM cpu WHERE time > now() - 1h GROUP BY time(1m)',
  'SELECT last(value) FROM temp GROUP BY *',
  'SELECT count(*) FROM /.*/',
  'SELECT max(v), min(v) FROM cpu WHERE time >= 0 AND time < now() GROUP BY time(1d) fill(previous)',
  'SELECT derivative(mean(v), 1s) FROM cpu WHERE time > now() - 7d GROUP BY time(1h)',
  'SELECT percentile(v, 99.9) FROM cpu',
  'SELECT v FROM cpu WHERE host =~ /(a|b)*c/ LIMIT 5 OFFSET 2',
  'SELECT mean(v) FROM cpu WHERE time > now() - 100000d GROUP BY time(1s)',
  'SHOW DATABASES', 'SHOW MEASUREMENTS', 'SHOW TAG KEYS FROM cpu', 'SHOW FIELD KEYS', 'SHOW SERIES LIMIT 3', 'SHOW RETENTION POLICIES',
  'SELECT * FROM (SELECT mean(v) FROM cpu GROUP BY time(1m))',
  'SELECT', 'SELECT * FROM', 'DROP DATABASE x', 'SELECT "a"."b"."c" FROM "d"."e"."f"', "SELECT 'str' FROM cpu", 'SELECT * FROM cpu WHERE time > 99999999999999999999',
  'SELECT top(v, 100000) FROM cpu', 'SELECT * FROM cpu; SELECT * FROM temp; SHOW DATABASES',
];

const PROMQL = [
  'up', 'temp_c', '{__name__=~".+"}', 'rate(flow[5m])', 'sum by (job) (rate(up[1m]))', 'histogram_quantile(0.9, rate(x[5m]))',
  'avg_over_time(temp_c[1h])', 'topk(3, up)', 'up offset 1d', 'up @ 1700000000', 'max_over_time(up[1d:1m])', 'absent(nothing)',
  'label_replace(up, "a", "$1", "job", "(.*)")', 'count_values("v", up)', 'quantile_over_time(0.5, up[10m])', 'predict_linear(up[1h], 3600)',
  '(((((((((((up)))))))))))', 'up{', 'sum(', '1 +', 'up[5m]', '-up', 'up and on() vector(1)', 'vector(1) / 0', 'x{a=~"(a+)+b"}', 'scalar(up) * 2',
];

function influxQlDraft(g: Gen, d: Probe): void {
  d.method = g.pick(['GET', 'POST']);
  d.opPath = '/query';
  let q = g.pick(INFLUX_SELECTS);
  if (g.chance(0.2)) q = q.replace(/cpu/g, g.pick(['"cpu"', 'temp', '/./', '"a"."b".cpu', '']));
  if (g.chance(0.05)) q = `${'('.repeat(g.pick([50, 5000]))}${q}`;
  const params: Array<[string, string]> = [['q', encodeURIComponent(q)]];
  if (g.chance(0.8)) params.push(['db', encodeURIComponent(g.pick(g.world.ids.clients ?? ['1']))]);
  if (g.chance(0.3)) params.push(['epoch', g.pick(['ns', 'u', 'µ', 'ms', 's', 'm', 'h', 'x'])]);
  if (g.chance(0.1)) params.push(['chunked', 'true'], ['chunk_size', g.pick(['1', '0', '-1', '100000'])]);
  if (g.chance(0.1)) params.push(['pretty', 'true']);
  if (d.method === 'POST' && g.chance(0.6)) {
    d.body = { kind: 'bytes', bytes: Buffer.from(params.map(([k, v]) => `${k}=${v}`).join('&')), contentType: 'application/x-www-form-urlencoded' };
  } else d.query.push(...params);
}

function promQlDraft(g: Gen, d: Probe): void {
  const range = g.chance(0.5);
  const path = g.pick(range ? ['/api/v1/query_range'] : ['/api/v1/query', '/api/v1/series', '/api/v1/labels']);
  d.method = g.pick(['GET', 'POST']);
  d.opPath = path;
  let q = g.pick(PROMQL);
  if (g.chance(0.2)) q = `${g.pick(['sum', 'avg', 'max', 'count'])}(${q})${g.pick([' > 1', ' * 2', '', ' unless up'])}`;
  const secs = Math.floor(g.world.window[0] / 1000);
  const params: Array<[string, string]> = [[path.endsWith('series') || path.endsWith('labels') ? 'match[]' : 'query', encodeURIComponent(q)]];
  if (range) {
    params.push(['start', String(g.pick([secs, secs - 1e9, 0, -1]))], ['end', String(g.pick([secs + 86400 * 2, secs, 9e15]))]);
    params.push(['step', g.pick(['15', '60s', '1h', '0', '-1', '0.001', 'abc', '1d'])]);
  } else if (g.chance(0.5)) params.push(['time', g.pick([String(secs + 3600), '2026-01-10T00:00:00Z', 'now', '-1e20'])]);
  if (g.chance(0.2)) params.push(['timeout', g.pick(['1s', '0', 'x', '100ms'])]);
  if (d.method === 'POST') d.body = { kind: 'bytes', bytes: Buffer.from(params.map(([k, v]) => `${k}=${v}`).join('&')), contentType: 'application/x-www-form-urlencoded' };
  else d.query.push(...params);
}

function blobKey(g: Gen): string {
  if (g.chance(0.85)) return `fuzz/${g.pick(['a', 'b', 'c.txt', 'dir/x.bin'])}${g.int(0, 20)}`;
  return g.pick(['..', 'a/../b', '%2e%2e/x', 'a//b', '', '.', 'x'.repeat(1100), 'a%00b', 'ü', 'a\\b']);
}

function blobDraft(g: Gen, d: Probe): void {
  d.method = g.pick(['PUT', 'PUT', 'GET', 'GET', 'DELETE']);
  d.opPath = '/svcapi/blob/{key}';
  d.pathOverride = `/svcapi/blob/${blobKey(g)}`;
  if (d.method === 'PUT') {
    const size = g.pick([0, 1, 100, 65_536, 1_000_000]);
    d.body = { kind: 'bytes', bytes: Buffer.alloc(size, g.int(0, 255)), contentType: g.pick(['application/octet-stream', 'text/plain', 'image/png', '', 'x/y; a=b']) };
  } else if (g.chance(0.3)) d.headers.range = g.pick(['bytes=0-10', 'bytes=-5', 'bytes=5-', 'bytes=10-0', 'bytes=99999999-', 'bytes=0-1,3-4', 'chars=0-1', 'bytes=']);
}

function attachmentDraft(g: Gen, d: Probe): void {
  d.method = 'POST';
  d.opPath = '/svcapi/attachments';
  const entity = g.pick(['units', 'orgs', 'equipment', 'nothing', '']);
  const table = g.world.tableOf[entity];
  d.query.push(['entity', encodeURIComponent(entity)], ['entityId', encodeURIComponent(g.chance(0.8) ? g.entityId(table) : g.pick(['-1', 'abc', '99999']))]);
  d.query.push(['name', encodeURIComponent(g.pick(['report.pdf', '../../etc/passwd', '', 'a'.repeat(300), 'ü.txt', 'a\u0000b']))]);
  d.body = { kind: 'bytes', bytes: Buffer.alloc(g.pick([0, 10, 50_000]), 7), contentType: g.pick(['application/pdf', 'application/octet-stream', 'text/plain']) };
}

function collectorDraft(g: Gen, d: Probe): void {
  const update = g.chance(0.3);
  d.method = update ? 'PUT' : 'POST';
  d.opPath = update ? '/svcapi/collectors/{id}' : '/svcapi/collectors';
  if (update) d.pathOverride = `/svcapi/collectors/${g.int(1, 30)}`;
  const kind = g.pick(['opcua', 'mqtt', 'modbus', '']);
  const scope = g.scope();
  const opcua = {
    endpoint_url: g.pick(['opc.tcp://127.0.0.1:1', 'opc.tcp://', 'http://x', '']),
    security_mode: g.pick(['None', 'Sign', 'SignAndEncrypt', 'Bogus']),
    security_policy: g.pick(['None', 'Basic256Sha256', 'x']),
    auth: g.pick(['anonymous', 'username', 'certificate', 'x']),
    username: 'u', password: g.pick(['secret-pw', '********']),
    publishing_interval_ms: g.pick([1000, 0, -1, 1e12, 'x']),
    ...(g.chance(0.2) ? { server_certificate_sha1: g.pick(['00'.repeat(20), 'zz', '']) } : {}),
  };
  const mqtt = { url: g.pick(['mqtt://127.0.0.1:1', 'mqtts://x', 'ftp://x', '']), username: 'u', password: 'p', client_id: g.word(), clean: g.pick([false, true, 'no']) };
  const many = g.chance(0.1);
  const items = Array.from({ length: many ? 2000 : g.pick([0, 1, 3]) }, (_, i) =>
    kind === 'mqtt'
      ? { topic: g.pick(['plant/#', '+/x', '#/bad', '', many ? 'long/topic' : 'a'.repeat(70_000)]), format: g.pick(['sparkplug_b', 'json', 'value', 'xml']), tag: `T${i}`, value_path: g.pick(['a.b', '', '..']) }
      : g.chance(0.9)
        ? { node_id: g.pick(['ns=2;s=Temp', 'i=2258', 'bad', '']), tag: `T${i}`, sampling_interval_ms: g.pick([100, 0, -5]), ...(g.chance(0.2) ? { deadband_abs: g.pick([0.1, -1, 'x']) } : {}) }
        : { browse: g.pick(['i=85', 'ns=2;s=Plant']), tag_prefix: g.pick(['p/', '']) },
  );
  d.body = {
    kind: 'json',
    value: { name: `fuzz ${g.word()}`, kind, enabled: g.chance(0.2), ...scope, connection: kind === 'mqtt' ? mqtt : opcua, items },
    contentType: 'application/json',
  };
}

const BUILDERS: Record<Kind, (g: Gen, d: Probe) => void> = {
  'line-protocol': lineProtocolDraft,
  'remote-write': remoteWriteDraft,
  influxql: influxQlDraft,
  promql: promQlDraft,
  blob: blobDraft,
  attachment: attachmentDraft,
  collector: collectorDraft,
};

/**
 * A request of the protocol group: a route found in the document by method and template (so
 * failures are classed under it), with a body the document cannot describe, from an identity
 * picked like any other (admin most often, so most requests reach the parsers).
 */
export function protocolDraft(g: Gen, ops: readonly Operation[], blank: (op: Operation) => Draft): Draft | null {
  const kind = g.pick(PROTOCOL_KINDS);
  const probe = { method: 'GET', opPath: '', query: [], headers: {}, body: null, pathOverride: null } as unknown as Probe;
  BUILDERS[kind](g, probe);
  const op = ops.find((o) => o.method === probe.method && o.path === probe.opPath) ?? ops.find((o) => o.path === probe.opPath);
  if (!op) return null;
  const d = blank(op);
  d.group = PROTOCOL_GROUP;
  d.method = probe.method;
  d.query = probe.query;
  d.headers = { ...probe.headers };
  d.body = probe.body;
  d.pathOverride = probe.pathOverride;
  d.mutations.push(`protocol-${kind}`);
  const identity = g.chance(0.7) ? g.world.identities[0]! : g.pick(g.world.identities);
  d.identity = identity.name;
  if (identity.token) d.headers.authorization = `Bearer ${identity.token}`;
  return d;
}

// ---- the live data WebSocket ------------------------------------------------------------------

export interface WsFuzzReport {
  sessions: number;
  messages: number;
  /** Sessions the server refused at upgrade (a bad token: 401 is the documented answer). */
  refused: number;
  /** Closes by the server, by code. */
  closes: Record<string, number>;
  /** Anything that is not a documented answer: a 5xx upgrade, close 1011, a control subscription not answered. */
  failures: string[];
}

const WS_MESSAGES = ['malformed', 'huge', 'unknown-op', 'flood', 'valid', 'unsubscribe', 'binary', 'odd-json'] as const;

function wsMessage(g: Gen, n: number): Array<string | Buffer> {
  const scope = g.scope();
  const sub = (id: string) => JSON.stringify({ op: 'subscribe', id, ...scope, tags: g.tags(), format: g.pick(['json', 'binary', 'xml']) });
  switch (g.pick(WS_MESSAGES)) {
    case 'malformed': return [g.pick(['{', '', 'null', '[]', '{"op":', '\u0000', '{"op":"subscribe"}}', '"str"', '1e999'])];
    // Up to the hub's 64 KiB message limit mostly; past it now and then (uWS then drops the connection).
    case 'huge': return g.chance(0.85)
      ? [JSON.stringify({ op: 'subscribe', id: 'h', ...scope, tags: Array.from({ length: g.pick([1000, 6000]) }, (_, i) => `T${i}`) })]
      : ['x'.repeat(g.pick([1 << 16, 1 << 20, 4 << 20]))];
    case 'unknown-op': return [JSON.stringify({ op: g.pick(['SUBSCRIBE', 'ping', 'points', '', null, 5, { a: 1 }]), id: 'u' })];
    case 'flood': return Array.from({ length: g.pick([50, 500]) }, (_, i) => sub(`f${n}-${i}`));
    case 'valid': return [sub(g.pick(['a', 'b', 'x'.repeat(300), '']))];
    case 'unsubscribe': return [JSON.stringify({ op: 'unsubscribe', id: g.pick(['a', 'b', 'nope', 7]) })];
    case 'binary': return [Buffer.from([0x80, 0xff, 0x00, 0x7b])];
    case 'odd-json': return [`{"op":"subscribe","id":"d","id":"e",${'"x":['.repeat(200)}${']'.repeat(200)}}`];
  }
}

function connect(target: FuzzTarget, token: string | null, query: boolean): Promise<WebSocket | { status: number | null; error: string }> {
  return new Promise((resolve) => {
    const url = `wss://localhost:${target.port}/svcapi/ws${token && query ? `?access_token=${encodeURIComponent(token)}` : ''}`;
    const ws = new WebSocket(url, { ca: target.ca, headers: token && !query ? { authorization: `Bearer ${token}` } : {}, maxPayload: 64 << 20 });
    const timer = setTimeout(() => {
      ws.terminate();
      resolve({ status: null, error: 'no upgrade answer within 20 s' });
    }, 20_000);
    ws.once('open', () => {
      clearTimeout(timer);
      resolve(ws);
    });
    ws.once('unexpected-response', (_req, res) => {
      clearTimeout(timer);
      resolve({ status: res.statusCode ?? null, error: `upgrade answered ${res.statusCode}` });
      res.resume();
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      resolve({ status: null, error: err.message });
    });
  });
}

/** A fresh admin socket subscribes to the first collection and must be answered (a hub or shard that no longer answers is the failure). */
async function control(target: FuzzTarget, world: World): Promise<string | null> {
  const ws = await connect(target, world.identities[0]!.token, false);
  if (!(ws instanceof WebSocket)) return `control socket: ${ws.error}`;
  try {
    return await new Promise<string | null>((resolve) => {
      const heard: string[] = [];
      const timer = setTimeout(() => resolve(`control subscription not answered within 20 s${heard.length ? ` (heard: ${heard.join(' | ').slice(0, 300)})` : ' (nothing heard)'}`), 20_000);
      ws.on('message', (data) => {
        const text = String(data);
        heard.push(text.slice(0, 150));
        // Any answer to it will do ("subscribed", or an error when a fuzzed request renamed the unit meanwhile): silence is the failure.
        if (/"id":"control"/.test(text)) {
          clearTimeout(timer);
          resolve(null);
        }
      });
      ws.send(JSON.stringify({ op: 'subscribe', id: 'control', ...world.collections[0], tags: world.tagsOf[0]!.slice(0, 1), format: 'json' }));
    });
  } finally {
    ws.terminate();
  }
}

/** `sessions` WebSocket sessions of fuzzed messages, one at a time; after every tenth (and the last) the control subscription. */
export async function runWsFuzz(target: FuzzTarget, world: World, seed: number, sessions: number, makeGen: (rng: () => number) => Gen): Promise<WsFuzzReport> {
  const report: WsFuzzReport = { sessions: 0, messages: 0, refused: 0, closes: {}, failures: [] };
  for (let s = 0; s < sessions; s++) {
    const g = makeGen(prng((seed ^ Math.imul(s + 7, 0x85ebca6b)) >>> 0));
    const identity = g.chance(0.1) ? { token: g.pick(['junk', 'eyJhbGciOiJub25lIn0.e30.', '']) } : g.pick(world.identities);
    const ws = await connect(target, identity.token, g.chance(0.3));
    report.sessions++;
    if (!(ws instanceof WebSocket)) {
      if (ws.status === 401 || ws.status === 403) report.refused++;
      else report.failures.push(`session ${s}: ${ws.error}`);
      continue;
    }
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => {});
    ws.on('message', () => {});
    for (let m = g.int(1, 30); m > 0 && ws.readyState === WebSocket.OPEN; m--) {
      for (const frame of wsMessage(g, m)) {
        if (ws.readyState !== WebSocket.OPEN) break;
        ws.send(frame);
        report.messages++;
      }
    }
    // Give the server the time to answer what it was sent, then leave (or stay half the time: the server closes).
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, g.pick([0, 50, 500])))]);
    if (ws.readyState === WebSocket.OPEN) g.chance(0.5) ? ws.close(1000) : ws.terminate();
    const code = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 20_000))]);
    report.closes[String(code)] = (report.closes[String(code)] ?? 0) + 1;
    if (code === 1011) report.failures.push(`session ${s}: the server closed with 1011 (internal error)`);
    if (code === -1) report.failures.push(`session ${s}: the socket did not close within 20 s`);
    if (s % 10 === 9 || s === sessions - 1) {
      const started = performance.now();
      const problem = await control(target, world);
      if (problem) {
        // Tell a slow hub from a wedged shard: does a second try on a fresh socket get through later?
        const retry = await control(target, world);
        report.failures.push(`after session ${s}: ${problem}; a second control subscription ${retry ? `failed too (${retry})` : `was answered ${Math.round((performance.now() - started) / 1000)} s after the first was sent`}`);
      }
    }
  }
  return report;
}
