/**
 * InfluxQL side by side (issue 28): our `/query` and InfluxDB 1.6's, on the same line protocol
 * data (100 series × 1 day at 1 s by default), the same TLS certificate and connections.
 *
 *   npm run bench:influx -- [--tags 100] [--points 86400] [--connections 4] [--seconds 10]
 *
 * Phases: ingest through each system's root `/write` (ours also through `/ingest/v2/write`, to
 * compare the two paths), then for `--seconds` each, round robin over the series:
 *   1. `SELECT mean("value") FROM "sensor" WHERE "tag" = '<t>' AND time >= <day start> AND time <= <day end> GROUP BY time(1m)`
 *   2. `SELECT "value" FROM "sensor" WHERE "tag" = '<t>' AND time > <day end> - 1h` (the data set's last hour,
 *      absolute times: the data lies in the past, so now() - 1h would select nothing)
 * and reports queries/s per system and ours ÷ InfluxDB (goals: ≥ 3× and ≥ 2×).
 */

import { Dataset, influxLines } from './dataset.js';
import { createIngestClient } from './ours.js';
import { INFLUX_BIN, INFLUX_DB, requirePeerBinaries, serviceTls, startInfluxDb, type PeerServer } from './peer-servers.js';
import { commandLine, describeReply, machine, markdownTable, num, positiveIntOption, runPool, sizeOptions, sleep } from './runner.js';
import { startOurService, type HttpsClient } from './service.js';

const CLIENT = 'bench-influx';
const MEASUREMENT = 'sensor';
const SCOPE = { organization: 'bench', site: 'plant-1', unit: 'influx', grid: 'main' };

const { sizes, values } = sizeOptions({ seconds: { type: 'string' } });
const seconds = positiveIntOption(values, 'seconds', 10);
requirePeerBinaries([INFLUX_BIN]);
const dataset = new Dataset({ ...sizes, tagsPerRequest: Math.min(sizes.tags, 10), pointsPerRequest: 5000 });
const bodies: string[] = [];
for (const chunk of dataset.chunks()) bodies.push(influxLines(MEASUREMENT, SCOPE, chunk));
const startNs = `${dataset.startMs}000000`;
const endNs = `${dataset.endMs}000000`;
const lastHourNs = `${dataset.endMs - 3_600_000}000000`;

interface Figures {
  ingestPointsPerSecond: number;
  meanPerMinute: number;
  rawLastHour: number;
  v2PointsPerSecond?: number;
  rootPointsPerSecond?: number;
}

async function ingest(client: HttpsClient, path: string): Promise<number> {
  const started = performance.now();
  let next = 0;
  await runPool(sizes.connections, { next: () => (next < bodies.length ? { done: false, value: bodies[next++]! } : { done: true, value: undefined }) } as Iterator<string>, async (body) => {
    for (;;) {
      const reply = await client.request('POST', path, body, { 'content-type': 'text/plain' });
      if (reply.status === 204) return;
      // A full request ring (ours) or a busy server asks for a retry; the retries are part of the time.
      if (reply.status !== 503 && reply.status !== 429) throw describeReply(`POST ${path}`, reply);
      await sleep(20);
    }
  });
  return dataset.totalPoints / ((performance.now() - started) / 1000);
}

async function rate(client: HttpsClient, query: (tag: string) => string, db: string): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  let k = 0;
  const jobs: Iterator<string> = { next: () => (performance.now() < until ? { done: false, value: dataset.tagNames[k++ % dataset.tagNames.length]! } : { done: true, value: undefined }) } as Iterator<string>;
  const started = performance.now();
  await runPool(sizes.connections, jobs, async (tag) => {
    const reply = await client.request('GET', `/query?db=${encodeURIComponent(db)}&epoch=ms&q=${encodeURIComponent(query(tag))}`);
    if (reply.status !== 200 || !reply.body.toString('utf8').includes('"values"')) throw describeReply(`query ${query(tag)}`, reply);
    done++;
  });
  return done / ((performance.now() - started) / 1000);
}

const meanQuery = (tag: string) => `SELECT mean("value") FROM "${MEASUREMENT}" WHERE "tag" = '${tag}' AND time >= ${startNs} AND time <= ${endNs} GROUP BY time(1m)`;
const rawQuery = (tag: string) => `SELECT "value" FROM "${MEASUREMENT}" WHERE "tag" = '${tag}' AND time > ${lastHourNs}`;

const service = await startOurService({ ingest: { rateLimitPerMinute: 1_000_000 } });
let influx: PeerServer | null = null;
try {
  const ourClient = service.client(sizes.connections);
  await createIngestClient(ourClient, CLIENT, SCOPE);
  const ours: Figures = { ingestPointsPerSecond: await ingest(ourClient, `/write?db=${CLIENT}&precision=ms`), meanPerMinute: 0, rawLastHour: 0 };
  ours.meanPerMinute = await rate(ourClient, meanQuery, CLIENT);
  ours.rawLastHour = await rate(ourClient, rawQuery, CLIENT);
  // The two write paths, interleaved into fresh collections (each round a new grid), best of two each.
  const root: number[] = [];
  const v2: number[] = [];
  for (let round = 0; round < 2; round++) {
    for (const [path, list] of [['/write', root], ['/ingest/v2/write', v2]] as const) {
      const client = `${CLIENT}-${list === root ? 'root' : 'v2'}-${round}`;
      await createIngestClient(ourClient, client, { ...SCOPE, grid: client });
      list.push(await ingest(ourClient, `${path}?db=${client}&precision=ms`));
    }
  }
  ours.rootPointsPerSecond = Math.max(...root);
  ours.v2PointsPerSecond = Math.max(...v2);

  influx = await startInfluxDb(serviceTls(service), sizes.connections);
  const theirs: Figures = { ingestPointsPerSecond: await ingest(influx.client, `/write?db=${INFLUX_DB}&precision=ms`), meanPerMinute: 0, rawLastHour: 0 };
  theirs.meanPerMinute = await rate(influx.client, meanQuery, INFLUX_DB);
  theirs.rawLastHour = await rate(influx.client, rawQuery, INFLUX_DB);

  const ratio = (a: number, b: number, goal?: number) => `${num(a / b)}×${goal ? ` (goal ≥ ${goal}×: ${a / b >= goal ? 'met' : 'NOT met'})` : ''}`;
  console.log(`# InfluxQL: ours vs InfluxDB\n\n\`${commandLine()}\`\n\n${machine()}\n`);
  console.log(`data set ${dataset.options.tags} series × ${dataset.options.points} points at 1 s (${dataset.totalPoints.toLocaleString('en')} points), ${sizes.connections} connections, ${seconds} s per query phase; ${influx.version}\n`);
  console.log(markdownTable(['figure', 'ours', 'InfluxDB', 'ours ÷ InfluxDB'], [
    ['ingest, root `/write`, points/s', num(ours.ingestPointsPerSecond, 0), num(theirs.ingestPointsPerSecond, 0), ratio(ours.ingestPointsPerSecond, theirs.ingestPointsPerSecond)],
    ['ours, into fresh collections, best of two interleaved rounds: root `/write` ÷ `/ingest/v2/write`', `${num(ours.rootPointsPerSecond!, 0)} / ${num(ours.v2PointsPerSecond!, 0)}`, '', ratio(ours.rootPointsPerSecond!, ours.v2PointsPerSecond!) + ' (the same handler)'],
    ['`mean(value) … GROUP BY time(1m)` over one series\' day, queries/s', num(ours.meanPerMinute, 1), num(theirs.meanPerMinute, 1), ratio(ours.meanPerMinute, theirs.meanPerMinute, 3)],
    ['raw `value` of one series\' last hour, queries/s', num(ours.rawLastHour, 1), num(theirs.rawLastHour, 1), ratio(ours.rawLastHour, theirs.rawLastHour, 2)],
  ]));
} finally {
  await influx?.stop();
  await service.dispose();
}
