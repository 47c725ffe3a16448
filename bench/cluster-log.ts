/**
 * What replication costs, in load-independent figures (issue 33): a 2-node cluster (writeAck
 * "local"), `--days` days of the data set (HSW1, /svcapi/write) into the leader, then:
 * - CPU seconds per million points of each node process (user + system, from /proc), from before
 *   the ingest until the secondary has caught up;
 * - the replication log of each node: entries, bytes of the entries (meta + body), SQLite pages
 *   in use by the file (page_count − freelist), per point written; right after the catch-up and
 *   again `--settle-seconds` later (what trimming left).
 *
 * `--single` first measures a single node (cluster.enabled false) the same way, as the reference.
 *
 *   node dist/bench/cluster-log.js [--single] [--days 1] [--settle-seconds 5] [--tags 100] [--points 86400]
 */

import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { startCluster, waitInSync, type BenchNode } from './cluster-nodes.js';
import { Dataset } from './dataset.js';
import { createCollection, ingestOurs, scopeFor } from './ours.js';
import { positiveIntOption, sizeOptions, sleep } from './runner.js';
import { processCpuSeconds, startOurService, threadCpuSeconds } from './service.js';

const { sizes, values } = sizeOptions({ days: { type: 'string' }, 'settle-seconds': { type: 'string' }, single: { type: 'boolean' } });
const days = positiveIntOption(values, 'days', 1);
const settle = positiveIntOption(values, 'settle-seconds', 5);
const dataset = new Dataset({ ...sizes, points: sizes.points * days });
const scope = scopeFor('boiler-log');

const pointsPerRequest = Math.min(sizes.tagsPerRequest, sizes.tags) * sizes.pointsPerRequest;

function logFigures(node: BenchNode): { entries: number; bytes: number; pagesInUse: number; writeBytesPerPoint: number } {
  const db = new Database(path.join(node.dataDir, 'metadata.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare('SELECT COUNT(*) AS n, COALESCE(SUM(length(meta) + COALESCE(length(body), 0)), 0) AS b FROM cluster_log').get() as { n: number; b: number };
    const pages = (db.pragma('page_count', { simple: true }) as number) - (db.pragma('freelist_count', { simple: true }) as number);
    // The data set's requests are all full (tags and points divide evenly): points per write entry are known.
    const writes = db.prepare("SELECT COUNT(*) AS n, COALESCE(SUM(length(meta) + COALESCE(length(body), 0)), 0) AS b FROM cluster_log WHERE kind = 'write'").get() as { n: number; b: number };
    return { entries: row.n, bytes: row.b, pagesInUse: pages * (db.pragma('page_size', { simple: true }) as number), writeBytesPerPoint: writes.n === 0 ? NaN : writes.b / (writes.n * pointsPerRequest) };
  } finally {
    db.close();
  }
}

/** CPU seconds per thread name (main thread, storage workers, libuv pool, V8 helpers) of a process. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = tid === String(pid) ? 'main' : fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      out.set(name, (out.get(name) ?? 0) + threadCpuSeconds(pid, Number(tid)));
    } catch {
      // the thread ended
    }
  }
  return out;
}

function printThreads(label: string, pid: number, before: Map<string, number>, points: number): void {
  const split = [...threadCpu(pid)].map(([name, s]) => [name, s - (before.get(name) ?? 0)] as const).filter(([, s]) => s > 0.005).sort((x, y) => y[1] - x[1]);
  process.stdout.write(`  ${label} CPU s per million points by thread: ${split.map(([name, s]) => `${name} ${(s / (points / 1e6)).toFixed(3)}`).join(', ')}\n`);
}

if (values.single === true) {
  const service = await startOurService({});
  try {
    await createCollection(service.client(1), scope);
    const before = processCpuSeconds(service.process.pid);
    const threadsBefore = threadCpu(service.process.pid);
    const result = await ingestOurs({ label: 'single', client: service.client(sizes.connections), connections: sizes.connections, dataset, scope, encoding: 'hsw1', route: '/svcapi/write' });
    const cpu = processCpuSeconds(service.process.pid) - before;
    process.stdout.write(`single node: ${Math.round(result.pointsPerSecond)} points/s (noisy); CPU s per million points ${(cpu / (dataset.totalPoints / 1e6)).toFixed(3)}\n`);
    printThreads('single', service.process.pid, threadsBefore, dataset.totalPoints);
  } finally {
    await service.dispose();
  }
}

const cluster = await startCluster({ nodes: 2, writeAck: 'local' });
try {
  const [leader, secondary] = cluster.nodes;
  const admin = leader.client(1);
  await createCollection(admin, scope);
  await waitInSync(leader, admin, 1, 60_000);
  const before = cluster.nodes.map((n) => processCpuSeconds(n.process!.pid));
  const threadsBefore = cluster.nodes.map((n) => threadCpu(n.process!.pid));
  const base = cluster.nodes.map(logFigures);
  const started = performance.now();
  // The log is trimmed as the secondary takes it: what it holds meanwhile is sampled.
  let peak = { entries: 0, bytes: 0 };
  let perPoint = NaN;
  const sampler = setInterval(() => {
    const f = logFigures(leader);
    if (f.bytes - base[0].bytes > peak.bytes) peak = { entries: f.entries - base[0].entries, bytes: f.bytes - base[0].bytes };
    if (!Number.isNaN(f.writeBytesPerPoint)) perPoint = f.writeBytesPerPoint;
  }, 100);
  let result;
  try {
    result = await ingestOurs({ label: 'cluster-log', client: leader.client(sizes.connections), connections: sizes.connections, dataset, scope, encoding: 'hsw1', route: '/svcapi/write' });
  } finally {
    clearInterval(sampler);
  }
  await waitInSync(leader, admin, 1, 600_000);
  const seconds = (performance.now() - started) / 1000;
  const cpu = cluster.nodes.map((n, i) => processCpuSeconds(n.process!.pid) - before[i]);
  const points = dataset.totalPoints;
  const show = (label: string, figs: ReturnType<typeof logFigures>[]) => {
    for (const [i, node] of cluster.nodes.entries()) {
      const f = figs[i];
      process.stdout.write(`${label} ${node.nodeId}: ${f.entries - base[i].entries} entries, ${((f.bytes - base[i].bytes) / points).toFixed(3)} B/pt in entries, ${((f.pagesInUse - base[i].pagesInUse) / points).toFixed(3)} B/pt of pages in use; the write entries kept take ${f.writeBytesPerPoint.toFixed(3)} B per point they carry\n`);
    }
  };
  process.stdout.write(`${points} points in ${seconds.toFixed(1)} s with catch-up (${Math.round(result.pointsPerSecond)} points/s at the leader, noisy)\n`);
  process.stdout.write(`CPU s per million points: leader (${leader.nodeId}) ${(cpu[0] / (points / 1e6)).toFixed(3)}, secondary (${secondary.nodeId}) ${(cpu[1] / (points / 1e6)).toFixed(3)}\n`);
  for (const [i, node] of cluster.nodes.entries()) printThreads(node.nodeId, node.process!.pid, threadsBefore[i], points);
  process.stdout.write(`leader's log during the ingest (sampled every 100 ms): at most ${peak.entries} entries, ${(peak.bytes / 1048576).toFixed(1)} MiB; a write entry takes ${perPoint.toFixed(3)} B per point it carries\n`);
  show('log after catch-up', cluster.nodes.map(logFigures));
  await sleep(settle * 1000);
  show(`log ${settle} s later`, cluster.nodes.map(logFigures));
} finally {
  await cluster.dispose(sizes.keep);
}
