/**
 * Bytes on disk per point, ours against VictoriaMetrics, on the same data (issue 33's disk row):
 * each system ingests the data set, makes it compact (ours: seal_now; VictoriaMetrics:
 * force_flush + force_merge), stops gracefully, and its folder is measured after the stop
 * (ours: the collection's folder; VictoriaMetrics: the whole -storageDataPath). Also prints the
 * order-0 entropy of each tag's value deltas (at 4 decimals), the floor a delta coder can reach.
 *
 *   npm run bench:disk -- [--dataset noisy|plant] [--tags 100] [--points 86400] [--ours-only]
 *
 * Sizes do not depend on the machine's load, so this is cheap to rerun. Needs the Debian
 * package victoria-metrics (unless --ours-only).
 */

import fs from 'node:fs';
import { Dataset, vmImportLines, type Chunk } from './dataset.js';
import { collectionDir, createCollection, ingestOurs, scopeFor, sealNow } from './ours.js';
import { expectStatus, flushAndMergeVictoriaMetrics, requirePeerBinaries, serviceTls, startVictoriaMetrics, VM_BIN } from './peer-servers.js';
import { ingest, int, num, sizeOptions } from './runner.js';
import { diskUsage, startOurService, type DiskUsage } from './service.js';

const { sizes, values } = sizeOptions({ 'ours-only': { type: 'boolean' } });
// This bench is about the noisy data; the plant data is one flag away.
if (values.dataset === undefined) sizes.dataset = 'noisy';
const oursOnly = values['ours-only'] === true;
if (!oursOnly) requirePeerBinaries([VM_BIN]);
const dataset = new Dataset(sizes);
const scope = scopeFor('disk');
const total = dataset.totalPoints;
process.stderr.write(`data set ${sizes.dataset}: ${int(sizes.tags)} tags × ${int(sizes.points)} points = ${int(total)} points\n`);

/** Order-0 entropy of each tag's deltas at 4 decimals, summed over the tags: bits. */
function deltaEntropyBits(): number {
  const histograms = dataset.tagNames.map(() => new Map<number, number>());
  const last = dataset.tagNames.map(() => NaN);
  for (const chunk of dataset.chunks()) {
    chunk.columns.forEach(({ values: v }, c) => {
      const t = dataset.tagNames.indexOf(chunk.columns[c].name);
      const h = histograms[t];
      for (let i = 0; i < v.length; i++) {
        const n = Math.round(v[i] * 1e4);
        if (!Number.isNaN(last[t])) h.set(n - last[t], (h.get(n - last[t]) ?? 0) + 1);
        last[t] = n;
      }
    });
  }
  let bits = 0;
  for (const h of histograms) {
    let n = 0;
    for (const c of h.values()) n += c;
    for (const c of h.values()) bits -= c * Math.log2(c / n);
  }
  return bits;
}

const service = await startOurService({});
let ours: DiskUsage;
try {
  const client = service.client(sizes.connections);
  await createCollection(client, scope);
  await ingestOurs({ label: 'ours HSW1', client, connections: sizes.connections, dataset, scope, encoding: 'hsw1' });
  const sealed = await sealNow(client);
  process.stderr.write(`ours: ${sealed} day(s) sealed\n`);
  const exit = await service.stop();
  if (exit.code !== 0) throw new Error(`our service exited with ${exit.code ?? exit.signal}`);
  ours = diskUsage(collectionDir(service, scope));
} finally {
  await service.dispose();
}

let vm: DiskUsage | null = null;
if (!oursOnly) {
  // The same certificate setup as bench:peers; a throwaway service makes it.
  const certs = await startOurService({});
  const server = await startVictoriaMetrics(serviceTls(certs), sizes.connections);
  try {
    await ingest<Chunk>({
      label: 'VictoriaMetrics /api/v1/import',
      connections: sizes.connections,
      chunks: dataset.chunks(),
      totalPoints: total,
      encode: (chunk) => ({ bytes: vmImportLines(scope, chunk), points: chunk.points }),
      send: (body) => server.client.request('POST', '/api/v1/import', body.bytes, { 'content-type': 'application/json' }),
      check: expectStatus('POST /api/v1/import', 204),
    });
    await flushAndMergeVictoriaMetrics(server);
  } finally {
    await server.stop();
    await certs.dispose();
  }
  vm = diskUsage(server.dataDir);
  fs.rmSync(server.dataDir, { recursive: true, force: true });
}

const perPoint = (d: DiskUsage) => `${num(d.bytes / total, 3)} B/point (${int(d.files)} files, ${int(d.bytes)} bytes)`;
console.log(`# Disk after a graceful stop, data set ${sizes.dataset}, ${int(sizes.tags)} tags × ${int(sizes.points)} points at 1 s\n`);
console.log(`value-delta entropy (order 0, per tag): ${num(deltaEntropyBits() / 8 / total, 3)} B/point`);
console.log(`ours:            ${perPoint(ours)}`);
if (vm) {
  console.log(`VictoriaMetrics: ${perPoint(vm)}`);
  console.log(`ours ÷ VictoriaMetrics: ${(ours.bytes / vm.bytes).toFixed(2)}×`);
}
