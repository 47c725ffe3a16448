/**
 * Backup and restore (issue 17) on our service: backup and restore throughput of the bench data
 * set, and ingest while time-series backups run back to back. Prints one markdown table.
 *
 *   npm run bench:backup -- [--quick] [--rounds 3] [--ingest-days 4] [--tags 100] [--points 86400]
 *                           [--connections 4] [--tags-per-request 10] [--points-per-request 1000]
 *                           [--keep] [--wait-idle 120]
 *
 * - The data set of dataset.ts (100 tags × 86,400 points) in HSW1 through /svcapi/write_fast,
 *   plus metadata rows (entities and users) so the SQLite backup is not empty.
 * - Backups: `POST /api/admin/backup/run`, then `GET /svcapi/process-log/{id}` until the job is
 *   done; MB/s is the file's `size_bytes` (from `/list`) over the job's finished_ms − started_ms.
 *   Time series with the day still in its day logs, then after `seal_now`; SQLite. Each
 *   `--rounds` times, the median round reported.
 * - Restores: `POST /api/admin/backup/restore/{kind}` of those files; MB/s is the file size over
 *   the request's time (it answers when the restore is done); then one tag counted back.
 * - Ingest: a second data set (`--ingest-days` days of the same tags) in HSW1 into a fresh
 *   collection per phase, `--connections` requests in flight, every body built before the clock:
 *   two warm-ups (not reported), without a backup, while time-series backups run back to back,
 *   and without again (rates drift between windows of one run, so the middle one is compared
 *   with both). Per phase: write latency p50/p99/max, /ingest/health from a worker thread, and
 *   every point counted back. Before each phase `sync` (earlier parts' writeback is not its
 *   cost), after it `seal_now`.
 * - The service runs with `storage.sealGraceMs` of 100 years: the data set's day (2024-01-01)
 *   ended long ago, and the background sealer (every minute) would otherwise seal it before the
 *   "day logs" backup is taken. `seal_now` seals it when the script asks.
 */

import { execFileSync } from 'node:child_process';
import { Dataset, type Scope } from './dataset.js';
import { countStoredPoints, createCollection, fastQueryUrl, ingestOurs, scopeFor, sealNow, waitForJob, withHealthProbe, type HealthFigures } from './ours.js';
import {
  BenchError, commandLine, describeReply, int, machine, markdownTable, mib, ms, num, otherLoad, Phases, positiveIntOption, sizeOptions, type IngestResult,
} from './runner.js';
import { cpuMeter, json, processCpuSeconds, startOurService, waitForQuiet } from './service.js';

const { sizes, values } = sizeOptions({ rounds: { type: 'string' }, 'ingest-days': { type: 'string' } });
const { connections } = sizes;
const rounds = positiveIntOption(values, 'rounds', sizes.quick ? 1 : 3);
const ingestDays = positiveIntOption(values, 'ingest-days', sizes.quick ? 1 : 4);

const SETTINGS = { storage: { sealGraceMs: 100 * 365 * 86_400_000 } };
const METADATA = { equipment: 200, tagmeta: 5000, users: 20, perRequest: 500 };

const dataset = new Dataset(sizes);
// Same tags, `--ingest-days` days, other values: the write load of the ingest phases.
const ingestDataset = new Dataset({ ...sizes, points: sizes.points * ingestDays, seed: 7_654_321 });
const dataScope = scopeFor('boiler-backup');
const shape = (d: Dataset) => `${int(d.options.tags)} tags × ${int(d.options.points)} points`;

const mb = (bytes: number) => `${num(bytes / 1e6, bytes < 1e7 ? 2 : 1)} MB`;
const mbPerSecond = (bytes: number, millis: number) => (millis > 0 ? bytes / 1e6 / (millis / 1000) : NaN);
const rangeOf = (xs: number[], format: (x: number) => string) => (xs.length < 2 ? '' : `${format(Math.min(...xs))}–${format(Math.max(...xs))}`);
/** The median round by `rate` (the lower one of two), as rawQuery reports its rounds. */
const medianBy = <T>(items: T[], rate: (item: T) => number): T => [...items].sort((a, b) => rate(a) - rate(b))[(items.length - 1) >> 1];

await waitForQuiet(sizes.waitIdle);
process.stderr.write(`starting the service; data set ${shape(dataset)} = ${int(dataset.totalPoints)} points, ${rounds} rounds\n`);
const service = await startOurService(SETTINGS);
const admin = service.client(1);
const rows: string[][] = [];
const phases = new Phases();
/** VmHWM after each part of the run, so the table says which part raised the peak. */
const peaks: string[] = [];
const notePeak = (after: string) => peaks.push(`${after} ${mib(service.process.peakRssBytes())}`);

// ---- the service's backup and process-log routes ------------------------------------------

type BackupKind = 'sqlite' | 'timeseries';

interface BackupRun {
  file: string;
  bytes: number;
  /** finished_ms − started_ms of its job. */
  jobMs: number;
  points: number | null;
  /** CPU seconds the whole service used while it ran. */
  serverCpuSeconds: number;
  otherCores: number;
}

/** One backup of `kind`, started and waited for; its file as `/list` describes it. */
async function runBackup(kind: BackupKind): Promise<BackupRun> {
  const other = cpuMeter();
  const cpuBefore = processCpuSeconds(service.process.pid);
  const started = await admin.postJson('/api/admin/backup/run', { kind });
  if (started.status !== 200) throw describeReply(`POST /api/admin/backup/run (${kind})`, started);
  const job = await waitForJob(admin, json(started).job_id as string);
  const serverCpuSeconds = processCpuSeconds(service.process.pid) - cpuBefore;
  const otherCores = other();
  const status = await admin.get('/api/admin/backup/status');
  if (status.status !== 200) throw describeReply('GET /api/admin/backup/status', status);
  const file = json(status)[`last_${kind}`]?.file_name as string | undefined;
  const list = await admin.get('/api/admin/backup/list');
  if (list.status !== 200) throw describeReply('GET /api/admin/backup/list', list);
  const info = (json(list)[`${kind}_backups`] as Array<{ file_name: string; size_bytes: number; points?: number }>).find((f) => f.file_name === file);
  if (!info) throw describeReply(`GET /api/admin/backup/list (no ${kind} backup named ${file})`, list);
  return { file: info.file_name, bytes: info.size_bytes, jobMs: job.finished_ms! - job.started_ms, points: info.points ?? null, serverCpuSeconds, otherCores };
}

interface RestoreRun {
  millis: number;
  restored: { collections?: number; points?: number; tables?: number; rows?: number };
  otherCores: number;
}

/** Restores `file`; the request answers when the restore is done, so its time is the restore's. */
async function restore(kind: BackupKind, file: string): Promise<RestoreRun> {
  const other = cpuMeter();
  const reply = await admin.postJson(`/api/admin/backup/restore/${kind}`, { file_name: file });
  if (reply.status !== 200) throw describeReply(`POST /api/admin/backup/restore/${kind} (${file})`, reply);
  return { millis: reply.ms, restored: json(reply).restored, otherCores: other() };
}

// ---- table rows ---------------------------------------------------------------------------

function backupRow(label: string, runs: BackupRun[] | null): BackupRun | null {
  if (!runs) {
    rows.push([label, 'FAILED', '']);
    return null;
  }
  const rates = runs.map((r) => mbPerSecond(r.bytes, r.jobMs));
  const median = medianBy(runs, (r) => mbPerSecond(r.bytes, r.jobMs));
  const spread = runs.length > 1 ? ` (median of ${runs.length}, ${rangeOf(rates, (x) => num(x, 1))} MB/s)` : '';
  const points = median.points === null ? '' : `, ${int(median.points)} points`;
  rows.push([
    label,
    `${num(mbPerSecond(median.bytes, median.jobMs), 1)} MB/s`,
    `${mb(median.bytes)}${points} in ${ms(median.jobMs)}${spread}; service CPU ${num(median.serverCpuSeconds)} s${otherLoad(Math.max(...runs.map((r) => r.otherCores)))}`,
  ]);
  return median;
}

function restoreRow(label: string, bytes: number, runs: RestoreRun[] | null, check: string): void {
  if (!runs) {
    rows.push([label, 'FAILED', '']);
    return;
  }
  const rates = runs.map((r) => mbPerSecond(bytes, r.millis));
  const median = medianBy(runs, (r) => mbPerSecond(bytes, r.millis));
  const spread = runs.length > 1 ? ` (median of ${runs.length}, ${rangeOf(rates, (x) => num(x, 1))} MB/s)` : '';
  const r = median.restored;
  const what = r.points !== undefined ? `${int(r.collections ?? NaN)} collection(s), ${int(r.points)} points` : `${int(r.tables ?? NaN)} tables, ${int(r.rows ?? NaN)} rows`;
  rows.push([label, `${num(mbPerSecond(bytes, median.millis), 1)} MB/s`, `${mb(bytes)} in ${ms(median.millis)}${spread}; restored ${what}; ${check}${otherLoad(Math.max(...runs.map((x) => x.otherCores)))}`]);
}

async function repeat<T>(times: number, label: string, work: () => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 1; i <= times; i++) {
    process.stderr.write(`  ${label} ${i} of ${times}\n`);
    out.push(await work());
  }
  return out;
}

// ---- data and metadata --------------------------------------------------------------------

async function createMetadata(): Promise<number> {
  const create = async (entity: string, items: object[]): Promise<string[]> => {
    const ids: string[] = [];
    for (let i = 0; i < items.length; i += METADATA.perRequest) {
      const reply = await admin.postJson(`/svcapi/${entity}/bulk`, items.slice(i, i + METADATA.perRequest));
      if (reply.status !== 200) throw describeReply(`POST /svcapi/${entity}/bulk`, reply);
      ids.push(...(json(reply) as Array<{ id: string }>).map((e) => e.id));
    }
    return ids;
  };
  const [org] = await create('orgs', [{ name: dataScope.organization, description: 'benchmark organisation' }]);
  const [site] = await create('sites', [{ name: dataScope.site, orgsId: org, timezone: 'Europe/Berlin' }]);
  const [unit] = await create('units', [{ name: dataScope.unit, siteId: site, capacityMw: 420 }]);
  const equipment = await create('equipment', Array.from({ length: METADATA.equipment }, (_, i) => ({ unitsId: unit, name: `EQ-${1000 + i}`, kind: ['pump', 'valve', 'fan', 'burner'][i % 4], vendor: 'Bench GmbH' })));
  const tags = await create('tagmeta', Array.from({ length: METADATA.tagmeta }, (_, i) => ({
    unitsId: unit, equipmentId: equipment[i % equipment.length], dataTagId: dataset.tagNames[i % dataset.tagNames.length],
    description: `measurement ${i} of equipment ${i % equipment.length}`, engineeringUnit: ['°C', 'bar', 't/h', '%'][i % 4], low: 0, high: 100 + (i % 500),
  })));
  const users = await create('users', Array.from({ length: METADATA.users }, (_, i) => ({ email: `operator-${i}@bench.local`, password: `bench-operator-password-${i}`, role: 'read-only', username: `Operator ${i}` })));
  return 3 + equipment.length + tags.length + users.length;
}

/** Points of the data set's first tag read back raw (`fast_query`), as a restore check. */
async function countFirstTag(): Promise<number> {
  const tag = dataset.tagNames[0];
  const reply = await admin.get(fastQueryUrl('/svcapi/fast_query', dataScope, [tag], dataset.startMs, dataset.endMs));
  if (reply.status !== 200) throw describeReply(`GET /svcapi/fast_query (${tag})`, reply);
  const points = (json(reply) as Record<string, unknown[] | undefined>)[tag];
  return Array.isArray(points) ? points.length : 0;
}

/** Restores a time-series backup `rounds` times, checking the answer and one tag after each. */
async function restoreTimeseries(file: string): Promise<{ runs: RestoreRun[]; check: string }> {
  let counted = 0;
  const runs = await repeat(rounds, `restore ${file}`, async () => {
    const run = await restore('timeseries', file);
    if (run.restored.points !== dataset.totalPoints) throw new BenchError(`restore of ${file} restored ${run.restored.points} points, the backup holds ${dataset.totalPoints}`);
    counted = await countFirstTag();
    if (counted !== dataset.options.points) throw new BenchError(`after restoring ${file}, ${dataset.tagNames[0]} has ${counted} points, expected ${dataset.options.points}`);
    return run;
  });
  return { runs, check: `${dataset.tagNames[0]} read back with fast_query: ${int(counted)} points` };
}

// ---- ingest phases ------------------------------------------------------------------------

/**
 * HSW1 `write_fast` of `data` on fresh connections: the server closes a connection idle for
 * 10 s, and a request sent on one just as it does fails with "socket hang up".
 */
async function writeHsw1(label: string, data: Dataset, scope: Scope): Promise<IngestResult> {
  const client = service.client(connections);
  try {
    return await ingestOurs({ label, client, connections, dataset: data, scope, encoding: 'hsw1', encodeWhileSending: sizes.encodeWhileSending });
  } finally {
    client.close();
  }
}

interface IngestPhase {
  result: IngestResult;
  backups: BackupRun[];
  /** /ingest/health during the ingest: how long the main thread kept requests waiting. */
  health: HealthFigures;
}

/**
 * The second data set into a fresh collection; with `backups`, time-series backups run back to
 * back from the moment the clock starts until the ingest is done (the last one is waited for
 * after the window). Afterwards every finished day is sealed, so each phase starts with the
 * same kind of store: sealed history, nothing in day logs.
 */
async function ingestPhase(unit: string, backups: boolean): Promise<IngestPhase> {
  const scope = scopeFor(unit);
  await createCollection(admin, scope);
  // What earlier parts left for the kernel to write back is not this phase's cost.
  execFileSync('sync');
  let ingestDone = false;
  // Every body is built before the first await under writeHsw1, so the clock runs when the backups start.
  const ingesting = withHealthProbe(service, () => writeHsw1(`HSW1 ${unit}`, ingestDataset, scope)).finally(() => {
    ingestDone = true;
  });
  const backupLoop = async (): Promise<{ runs: BackupRun[]; error: unknown }> => {
    const runs: BackupRun[] = [];
    try {
      while (backups && !ingestDone) runs.push(await runBackup('timeseries'));
      return { runs, error: null };
    } catch (error) {
      return { runs, error };
    }
  };
  const [{ result, health }, loop] = await Promise.all([ingesting, backupLoop()]);
  if (loop.error) throw loop.error;
  await checkAllLanded(scope);
  await sealNow(admin);
  return { result, backups: loop.runs, health };
}

/** Every point of the phase is stored: counted per tag by the service. */
async function checkAllLanded(scope: Scope): Promise<void> {
  const counts = await countStoredPoints(admin, scope, ingestDataset.tagNames, ingestDataset.startMs, ingestDataset.endMs);
  const stored = [...counts.values()].reduce((a, b) => a + b, 0);
  if (stored !== ingestDataset.totalPoints) throw new BenchError(`${scope.unit}: ${stored} points stored, ${ingestDataset.totalPoints} sent`);
}

function ingestRow(label: string, phase: IngestPhase | null): void {
  if (!phase) {
    rows.push([label, 'FAILED', '']);
    return;
  }
  const r = phase.result;
  const during = phase.backups.length === 0 ? '' : `; ${phase.backups.length} time-series backups back to back (${rangeOf(phase.backups.map((b) => b.bytes), mb) || mb(phase.backups[0].bytes)}, each ${rangeOf(phase.backups.map((b) => b.jobMs), ms) || ms(phase.backups[0].jobMs)})`;
  rows.push([
    label,
    `${int(r.pointsPerSecond)} points/s`,
    `write p50 ${ms(r.latency.p50)}, p99 ${ms(r.latency.p99)}, max ${ms(r.latency.max)}; /ingest/health p99 ${ms(phase.health.p99)}, max ${ms(phase.health.max)}; ${int(r.points)} points in ${num(r.seconds)} s, ${int(r.requests)} requests, ${r.retries} retried (503)${during}${otherLoad(r.otherCores)}`,
  ]);
}

// ---- the run ------------------------------------------------------------------------------

await phases.run('create collection', () => createCollection(admin, dataScope));
process.stderr.write(`ingest of the data set (HSW1, /svcapi/write_fast)\n`);
const loaded = await phases.run('ingest the data set', () => writeHsw1('HSW1 data set', dataset, dataScope));
rows.push(['data set written (HSW1, /svcapi/write_fast)', loaded ? `${int(loaded.pointsPerSecond)} points/s` : 'FAILED', loaded ? `${shape(dataset)} = ${int(loaded.points)} points in ${num(loaded.seconds)} s${otherLoad(loaded.otherCores)}` : '']);
const metadataRows = await phases.run('metadata rows', createMetadata);
notePeak('data written');

process.stderr.write('time-series backups, day logs (unsealed)\n');
const unsealed = backupRow('time-series backup, day logs (before seal_now)', await phases.run('time-series backup (unsealed)', () => repeat(rounds, 'time-series backup', () => runBackup('timeseries'))));
process.stderr.write('SQLite backups\n');
const sqlite = backupRow(`SQLite backup (${int(metadataRows ?? NaN)} entity and user rows made through the API)`, await phases.run('sqlite backup', () => repeat(rounds, 'sqlite backup', () => runBackup('sqlite'))));

process.stderr.write('seal_now\n');
const sealStart = performance.now();
const sealed = await phases.run('seal_now', () => sealNow(admin));
rows.push(['seal_now of the data set', sealed === null ? 'FAILED' : ms(performance.now() - sealStart), `${sealed ?? '?'} day file(s) sealed`]);
process.stderr.write('time-series backups, sealed\n');
const sealedBackup = backupRow('time-series backup, sealed (files hard-linked)', await phases.run('time-series backup (sealed)', () => repeat(rounds, 'time-series backup', () => runBackup('timeseries'))));
notePeak('backups');

process.stderr.write('restores\n');
if (unsealed) {
  const r = await phases.run('restore time series (day logs)', () => restoreTimeseries(unsealed.file));
  restoreRow('time-series restore of the day-log backup', unsealed.bytes, r?.runs ?? null, r?.check ?? '');
}
if (sealedBackup) {
  const r = await phases.run('restore time series (sealed)', () => restoreTimeseries(sealedBackup.file));
  restoreRow('time-series restore of the sealed backup', sealedBackup.bytes, r?.runs ?? null, r?.check ?? '');
}
if (sqlite) {
  let tagmeta = NaN;
  const runs = await phases.run('restore sqlite', () =>
    repeat(rounds, `restore ${sqlite.file}`, async () => {
      const run = await restore('sqlite', sqlite.file);
      const count = await admin.get('/svcapi/tagmeta/count');
      if (count.status !== 200) throw describeReply('GET /svcapi/tagmeta/count', count);
      tagmeta = json(count).count as number;
      if (tagmeta !== METADATA.tagmeta) throw new BenchError(`after restoring ${sqlite.file}, tagmeta/count is ${tagmeta}, expected ${METADATA.tagmeta}`);
      return run;
    }),
  );
  restoreRow('SQLite restore', sqlite.bytes, runs, `tagmeta/count afterwards ${int(tagmeta)}`);
}
notePeak('restores');

process.stderr.write(`ingest phases: ${shape(ingestDataset)} each\n`);
// Not reported: in six such windows one after the other with no backup, the rate rose from 14 to
// 24 M points/s over the first three and then stayed (this client's CPU per window fell from 1.2
// to 0.6 s as it warmed up), which is not the backups' doing.
for (const n of [1, 2]) await phases.run(`ingest warm-up ${n}`, () => ingestPhase(`ingest-warm-up-${n}`, false));
const quiet = await phases.run('ingest without backup', () => ingestPhase('ingest-quiet', false));
ingestRow('ingest, HSW1, no backup running', quiet);
const busy = await phases.run('ingest during backups', () => ingestPhase('ingest-during-backups', true));
ingestRow('ingest, HSW1, time-series backups running back to back', busy);
const quietAgain = await phases.run('ingest without backup again', () => ingestPhase('ingest-quiet-again', false));
ingestRow('ingest, HSW1, no backup running (again)', quietAgain);
if (quiet && busy && quietAgain) {
  const without = (quiet.result.pointsPerSecond + quietAgain.result.pointsPerSecond) / 2;
  rows.push([
    'ingest during backups ÷ without',
    `${num(busy.result.pointsPerSecond / without)}×`,
    `against the mean of the two windows without (${num(busy.result.pointsPerSecond / quiet.result.pointsPerSecond)}× the first, ${num(busy.result.pointsPerSecond / quietAgain.result.pointsPerSecond)}× the second); p99 write latency ${ms(busy.result.latency.p99)} against ${ms(quiet.result.latency.p99)} and ${ms(quietAgain.result.latency.p99)}; every phase's points counted back`,
  ]);
}
notePeak('ingest phases');

rows.push(['peak RSS of the service (VmHWM)', mib(service.process.peakRssBytes()), `main thread + storage workers, whole run; after each part: ${peaks.join(', ')}`]);
const exit = await service.stop();
if (exit.code !== 0) phases.failures.push({ phase: 'shutdown', error: new Error(`service exited with ${exit.code ?? exit.signal}`) });

console.log(`# Backup and restore: our service\n`);
console.log(`\`${commandLine()}\`\n`);
console.log(
  `${machine()}; data set ${shape(dataset)} at 1 s (${int(dataset.totalPoints)} points); ingest phases ${shape(ingestDataset)} each, ${sizes.tagsPerRequest} tags × ${sizes.pointsPerRequest} points per request, ${connections} connections; storage.sealGraceMs 100 years, other settings default; MB = 10^6 bytes\n`,
);
console.log(markdownTable(['figure', 'value', 'detail'], rows));
console.log(phases.report(() => service.process.logTail(30)));

if (sizes.keep) process.stderr.write(`data dir kept: ${service.dataDir}\n`);
else await service.dispose();
process.exitCode = phases.failures.length > 0 ? 1 : 0;
