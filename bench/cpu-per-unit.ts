/**
 * Service CPU per unit of work, by thread (issue 33): line protocol ingest (µs per line) and
 * raw range queries in JSON `fast_query` and binary `fast_query_binary` (µs per point served).
 * CPU time, not wall time, so two builds can be compared on a machine others are using:
 *
 *   node dist/bench/cpu-per-unit.js [--tags 100] [--points 86400] [--rounds 3] [--dataset plant|noisy]
 *
 * Each thread's utime + stime comes from /proc/<pid>/task/<tid>/stat around each phase; the
 * service's own main thread is `main`; node names its other threads (workers, GC helpers) `node`.
 */

import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { decodeFormat1 } from '../native-free-codecs/result-binary.js';
import { DATASET_KINDS, Dataset, influxLines, type Chunk, type DatasetKind } from './dataset.js';
import { createIngestClient, fastQueryUrl, scopeFor, sealNow } from './ours.js';
import { ingest, int, num } from './runner.js';
import { startOurService, threadCpuSplit } from './service.js';

const { values } = parseArgs({ options: { tags: { type: 'string' }, points: { type: 'string' }, rounds: { type: 'string' }, dataset: { type: 'string' } } });
const tags = Number(values.tags ?? 100);
const points = Number(values.points ?? 86_400);
const rounds = Number(values.rounds ?? 3);
const scope = scopeFor('boiler-lp');
const kind = (values.dataset ?? 'plant') as DatasetKind;
if (!DATASET_KINDS.includes(kind)) throw new Error(`--dataset must be one of ${DATASET_KINDS.join(', ')}`);
const dataset = new Dataset({ tags, points, tagsPerRequest: tags, pointsPerRequest: Math.max(1, Math.floor(5000 / tags)), dataset: kind });
const service = await startOurService({ ingest: { rateLimitPerMinute: 1_000_000 } });
const pid = service.process.pid;

/** CPU seconds of every thread of the service now, by thread id. */
function threads(): Map<string, { name: string; cpu: number; system: number }> {
  const out = new Map<string, { name: string; cpu: number; system: number }>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    let name = '?';
    try {
      name = fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const { user, system } = threadCpuSplit(pid, Number(tid));
    out.set(tid, { name: tid === String(pid) ? 'main' : name, cpu: user + system, system });
  }
  return out;
}

/** Runs `work`, then prints µs of CPU per unit for the whole service and its busiest threads. */
async function measure(label: string, units: number, work: () => Promise<void>): Promise<void> {
  const before = threads();
  await work();
  const after = threads();
  const used: Array<[string, number, number]> = [];
  for (const [tid, t] of after) used.push([`${t.name}/${tid}`, t.cpu - (before.get(tid)?.cpu ?? 0), t.system - (before.get(tid)?.system ?? 0)]);
  const total = used.reduce((a, [, c]) => a + c, 0);
  const top = used
    .filter(([, c]) => c >= 0.02)
    .sort((a, b) => b[1] - a[1])
    .map(([n, c, sys]) => `${n} ${num((c * 1e6) / units, 3)} (system ${num((sys * 1e6) / units, 3)})`)
    .join(', ');
  console.log(`| ${label} | ${int(units)} | ${num((total * 1e6) / units, 3)} | ${top} |`);
}

try {
  const client = service.client(4);
  await createIngestClient(client, 'bench-lp', { organization: scope.organization, site: scope.site, unit: scope.unit });
  console.log('| phase | units | service CPU µs/unit | threads (µs/unit) |\n|---|---|---|---|');
  const path = '/ingest/v2/write?db=bench-lp&precision=ms';
  await measure('line protocol ingest, per line', dataset.totalPoints, async () => {
    await ingest<Chunk>({
      label: 'lp',
      connections: 4,
      chunks: dataset.chunks(),
      totalPoints: dataset.totalPoints,
      encode: (chunk) => ({ bytes: influxLines('sensor', scope, chunk, 'time'), points: chunk.points }),
      send: (body) => client.request('POST', path, body.bytes, { 'content-type': 'text/plain; charset=utf-8' }),
      check: (reply) => {
        if (reply.status !== 204) throw new Error(`write answered ${reply.status}: ${reply.body.toString()}`);
      },
    });
  });
  await sealNow(client); // queries read sealed days, as after any day
  const names = dataset.tagNames.map((t) => `sensor,tag=${t}.value`);
  for (const [route, count] of [
    ['/svcapi/fast_query', (body: Buffer, tag: string) => (JSON.parse(body.toString()) as Record<string, unknown[]>)[tag].length],
    ['/svcapi/fast_query_binary', (body: Buffer) => decodeFormat1(body).reduce((n, t) => n + t.timestamps.length, 0)],
  ] as const) {
    for (let round = 1; round <= rounds; round++) {
      let served = 0;
      const bodies: Array<[Buffer, string]> = [];
      await measure(`${route} raw day, per point (round ${round})`, dataset.totalPoints, async () => {
        let next = 0;
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            while (next < names.length) {
              const tag = names[next++];
              const reply = await client.get(fastQueryUrl(route, scope, [tag], dataset.startMs, dataset.endMs));
              if (reply.status !== 200) throw new Error(`${route} answered ${reply.status}`);
              bodies.push([reply.body, tag]);
            }
          }),
        );
      });
      for (const [body, tag] of bodies) served += count(body, tag);
      if (served !== dataset.totalPoints) throw new Error(`${route}: ${served} points served, ${dataset.totalPoints} expected`);
    }
  }
  // The service's peak resident memory over the whole run (ingest, seal, both query kinds).
  const peak = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  console.log(`\nservice peak RSS (VmHWM): ${peak ? num(Number(peak[1]) / 1024, 1) : '?'} MiB, ${kind} data set`);
} catch (error) {
  console.error(`${String(error)}\nthe service's last lines:\n${service.process.logTail().slice(-20).join('\n')}`);
  process.exitCode = 1;
} finally {
  await service.dispose();
}
