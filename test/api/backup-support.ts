// Helpers for the backup, restore and process-log API tests: running a backup and waiting for
// its job, reading backup files on disk (sha256, tar entries, the manifest), writing and reading
// back whole data sets, and snapshots of the live store to compare before and after a restore.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { waitFor } from '../support/wait-for.js';
import type { HttpResult, TestService } from './harness.js';
import type { JobRecord } from '../../src/jobs/job-log.js';

export const BACKUP = '/api/admin/backup';
export const DAY = 86_400_000;
/** Well in the past, so seal_now finds finished days. */
export const T0 = Date.UTC(2026, 0, 10);

export const enc = encodeURIComponent;
export const filterQuery = (filter: unknown) => `filter=${enc(JSON.stringify(filter))}`;

export interface Scope {
  organization: string;
  site: string;
  unit: string;
  grid: string;
}

export const scopeOf = (organization: string, site: string, unit: string, grid: string): Scope => ({ organization, site, unit, grid });
export const collectionId = (s: Scope) => `${s.organization}/${s.site}/${s.unit}/${s.grid}`;

/** Points per tag, sorted by time: what a query answers. */
export type Series = Record<string, Array<[number, number]>>;

/** A process-log job as the service answers it. */
export type Job = JobRecord;

export interface FileInfo {
  file_name: string;
  kind: 'sqlite' | 'timeseries';
  size_bytes: number;
  created_ms: number;
  sha256: string;
  collections?: unknown;
  points?: number;
  /** timeseries: blob and attachment content files carried. */
  blobs?: number;
  /** sqlite: it carries the secrets, sealed with a passphrase. */
  secrets?: boolean;
}

export interface BackupList {
  sqlite_backups: FileInfo[];
  timeseries_backups: FileInfo[];
}

/** The file info's `collections` as a count: WIRE leaves open whether it is a count or a list. */
export function collectionCount(info: FileInfo): number {
  return Array.isArray(info.collections) ? info.collections.length : (info.collections as number);
}

export function sha256(bytes: Buffer): string {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

export function sha256File(file: string): string {
  return sha256(fs.readFileSync(file));
}

/** Flips every bit of the byte at `offset`. */
export function flipByte(file: string, offset: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, offset);
    b[0] ^= 0xff;
    fs.writeSync(fd, b, 0, 1, offset);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Makes the sidecar (`<file>.json`, the file info) agree with the file as it is now, as if the
 * damage had happened before the checksum was taken: then only the content checks can refuse it.
 */
export function resignSidecar(file: string): void {
  const sidecar = `${file}.json`;
  const info = JSON.parse(fs.readFileSync(sidecar, 'utf8'));
  fs.writeFileSync(sidecar, JSON.stringify({ ...info, size_bytes: fs.statSync(file).size, sha256: sha256File(file) }));
}

export interface TarEntry {
  name: string;
  /** '0' file, '5' directory, '1' hard link, ... */
  type: string;
  /** Where the entry's content starts in the tar. */
  offset: number;
  size: number;
}

/** Reads a tar's entries (ustar, with pax and GNU long names), enough to check what a backup holds. */
export function readTar(file: string): { bytes: Buffer; entries: TarEntry[] } {
  const bytes = fs.readFileSync(file);
  const entries: TarEntry[] = [];
  const str = (start: number, len: number) => {
    const raw = bytes.subarray(start, start + len);
    const end = raw.indexOf(0);
    return raw.subarray(0, end < 0 ? len : end).toString('utf8');
  };
  let pos = 0;
  let longName: string | null = null;
  while (pos + 512 <= bytes.length) {
    if (bytes.subarray(pos, pos + 512).every((b) => b === 0)) break; // end of archive
    const size = parseInt(str(pos + 124, 12).trim() || '0', 8);
    const type = str(pos + 156, 1) || '0';
    const prefix = str(pos + 257, 6).startsWith('ustar') ? str(pos + 345, 155) : '';
    const dataAt = pos + 512;
    assert.ok(dataAt + size <= bytes.length, `tar entry at ${pos} runs past the end of ${path.basename(file)}`);
    const content = bytes.subarray(dataAt, dataAt + size);
    if (type === 'x') {
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(content.toString('utf8'));
      if (m) longName = m[1];
    } else if (type === 'L') {
      longName = content.toString('utf8').replace(/\0+$/, '');
    } else if (type !== 'g') {
      const name = longName ?? (prefix ? `${prefix}/${str(pos, 100)}` : str(pos, 100));
      entries.push({ name, type, offset: dataAt, size });
      longName = null;
    }
    pos = dataAt + Math.ceil(size / 512) * 512;
  }
  return { bytes, entries };
}

export function tarEntryBytes(tar: { bytes: Buffer }, entry: TarEntry): Buffer {
  return tar.bytes.subarray(entry.offset, entry.offset + entry.size);
}

/** Waits until the job is no longer running and returns it. */
export async function waitForJob(svc: TestService, admin: string, jobId: string, timeoutMs = 60_000): Promise<Job> {
  let job: Job | undefined;
  await waitFor(
    async () => {
      const res = await svc.get(`/svcapi/process-log/${enc(jobId)}`, admin);
      assert.equal(res.status, 200, `process-log/${jobId}: ${res.text}`);
      job = res.body as Job;
      return job.status !== 'running';
    },
    `job ${jobId} finishes`,
    { timeoutMs, intervalMs: 50 },
  );
  return job!;
}

/** Waits until backup status says nothing runs. */
export async function waitNotRunning(svc: TestService, admin: string): Promise<any> {
  let status: any;
  await waitFor(
    async () => {
      status = (await svc.get(`${BACKUP}/status`, admin)).body;
      return status?.running === false;
    },
    'backup status says running false',
    { timeoutMs: 60_000, intervalMs: 50 },
  );
  return status;
}

/** Starts a backup, waits for its job, and checks it succeeded. */
export async function runBackup(svc: TestService, admin: string, kind: 'sqlite' | 'timeseries' | 'all' = 'all'): Promise<Job> {
  const res = await svc.post(`${BACKUP}/run`, { kind }, admin);
  assert.equal(res.status, 200, `run ${kind}: ${res.text}`);
  assert.equal(res.body.success, true, res.text);
  assert.equal(typeof res.body.job_id, 'string', `job_id is a string: ${res.text}`);
  const job = await waitForJob(svc, admin, res.body.job_id);
  assert.equal(job.status, 'done', `backup job ${JSON.stringify(job)}`);
  await waitNotRunning(svc, admin);
  return job;
}

export async function listBackups(svc: TestService, admin: string): Promise<BackupList> {
  const res = await svc.get(`${BACKUP}/list`, admin);
  assert.equal(res.status, 200, res.text);
  return res.body as BackupList;
}

/** The newest backup of each kind (list is newest first); fails when a kind named in `need` has none. */
export async function newestBackups(
  svc: TestService,
  admin: string,
  need: Array<'sqlite' | 'timeseries'> = ['sqlite', 'timeseries'],
): Promise<{ sqlite: FileInfo; timeseries: FileInfo }> {
  const list = await listBackups(svc, admin);
  for (const kind of need) assert.ok(list[`${kind}_backups`].length > 0, `a ${kind} backup is listed: ${JSON.stringify(list)}`);
  return { sqlite: list.sqlite_backups[0], timeseries: list.timeseries_backups[0] };
}

export async function backupDirOf(svc: TestService, admin: string): Promise<string> {
  const config = (await svc.get(`${BACKUP}/config`, admin)).body;
  return path.resolve(svc.dataDir, config.directory as string);
}

export function restore(svc: TestService, admin: string, kind: 'sqlite' | 'timeseries', fileName: unknown): Promise<HttpResult> {
  return svc.post(`${BACKUP}/restore/${kind}`, { file_name: fileName }, admin);
}

/** Deterministic points with full float64 values (no -0, no NaN), `perTag` per tag, `stepMs` apart. */
export function makeSeries(prefix: string, tags: number, perTag: number, startMs: number, stepMs: number, salt = 1): Series {
  const out: Series = {};
  for (let t = 0; t < tags; t++) {
    out[`${prefix}-${t}`] = Array.from({ length: perTag }, (_, i) => [startMs + i * stepMs, (i + 1) * 0.1 * salt + t / 3 + Math.sin(i + salt) * 1e-9] as [number, number]);
  }
  return out;
}

export function pointCount(series: Series): number {
  return Object.values(series).reduce((n, points) => n + points.length, 0);
}

/** Writes the series in requests of at most `chunk` points per tag; every request must succeed. */
export async function writeSeries(svc: TestService, token: string, scope: Scope, series: Series, chunk = 20_000): Promise<void> {
  const longest = Math.max(0, ...Object.values(series).map((p) => p.length));
  for (let from = 0; from < longest; from += chunk) {
    const tags: Series = {};
    for (const [tag, points] of Object.entries(series)) if (points.length > from) tags[tag] = points.slice(from, from + chunk);
    const res = await svc.post('/svcapi/write', { ...scope, tags }, token);
    assert.equal(res.status, 200, `write to ${collectionId(scope)}: ${res.text.slice(0, 300)}`);
    assert.equal(res.body.success, true, `write to ${collectionId(scope)}: ${res.text.slice(0, 300)}`);
  }
}

export const RANGE_START = T0 - 30 * DAY;
export const RANGE_END = T0 + 60 * DAY;

/** Reads the tags of one collection over the whole test range. */
export async function readSeries(svc: TestService, token: string, scope: Scope, tags: string[]): Promise<Series> {
  const params = tags.map((t) => `tags=${enc(t)}`).join('&');
  const scopeParams = Object.entries(scope).map(([k, v]) => `&${k}=${enc(v)}`).join('');
  const res = await svc.get(`/svcapi/fast_query?${params}&start=${RANGE_START}&end=${RANGE_END}${scopeParams}`, token);
  assert.equal(res.status, 200, `query ${collectionId(scope)}: ${res.text.slice(0, 300)}`);
  return res.body as Series;
}

/** Sorted, last write wins: what the store should answer after `writes` in order. */
export function merged(...writes: Series[]): Series {
  const out: Record<string, Map<number, number>> = {};
  for (const series of writes) {
    for (const [tag, points] of Object.entries(series)) {
      out[tag] ??= new Map();
      for (const [ts, v] of points) out[tag].set(ts, v);
    }
  }
  return Object.fromEntries(Object.entries(out).map(([tag, m]) => [tag, [...m.entries()].sort((a, b) => a[0] - b[0])]));
}

export async function collectionIds(svc: TestService, admin: string): Promise<string[]> {
  const res = await svc.get('/svcapi/collection', admin);
  assert.equal(res.status, 200, res.text);
  return (res.body as Array<Record<string, string>>).map((c) => collectionId(c as unknown as Scope)).sort();
}

export async function createCollection(svc: TestService, admin: string, scope: Scope): Promise<void> {
  const res = await svc.post('/svcapi/create_collection', scope, admin);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.success, true, res.text);
}

/** Polls the process log until a job of `kind` is running (and, if given, shows `message`). */
export async function waitForRunningJob(svc: TestService, admin: string, kind: string, message?: string, timeoutMs = 30_000): Promise<Job> {
  let found: Job | undefined;
  await waitFor(
    async () => {
      const res = await svc.get(`/svcapi/process-log?kind=${kind}&status=running`, admin);
      assert.equal(res.status, 200, res.text);
      found = (res.body.jobs as Job[]).find((j) => j.status === 'running' && (message === undefined || j.message === message));
      return found !== undefined;
    },
    `a running ${kind} job${message ? ` with message '${message}'` : ''}`,
    { timeoutMs, intervalMs: 20 },
  );
  return found!;
}
