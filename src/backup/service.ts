// Backups and restores (WIRE.md part 2 "Backup"), one at a time, each a process-log job.
//
// - SQLite: the online backup API of the connection that writes (better-sqlite3 `backup`), so the
//   copy is one consistent state while writes go on; the copy is then a plain one-file database.
// - Time series as of one instant (StorageService.backupMark): writes wait a moment, every shard
//   flushes and hard-links its files into a staging folder, writes go on; the day logs' linked
//   inodes are then cut to their length at that instant, hashed, and packed with a manifest into
//   one tar (sealed files are already compressed, so the tar is not).
// - Restoring SQLite copies the backup's rows into the live database in one transaction on the
//   main connection (after bringing a copy of it to this build's schema), so every holder of the
//   connection sees the restored store at once and a crash leaves the old or the new, by SQLite's
//   own atomicity. Caches that mirror the store are rebuilt in the same turn.
// - Restoring time series unpacks and verifies the tar in a staging folder, then, with the
//   workers detached, swaps the ts folder (restore-marker.ts makes a crash mid-swap recoverable).
//
// Every verification happens before anything live is touched: a file that fails one leaves the
// live store as it was.

import crypto from 'node:crypto';
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import * as tar from 'tar';
import type { Config } from '../config.js';
import type { ServiceClock } from '../clock.js';
import { ServiceError, badRequest, conflict } from '../../shared/errors.js';
import type { Logger } from '../log.js';
import type { AccountStore } from '../auth/users.js';
import type { TokenService } from '../auth/tokens.js';
import type { Job, JobLog } from '../jobs/job-log.js';
import type { Db } from '../meta/database.js';
import { migrate } from '../meta/database.js';
import { MIGRATIONS } from '../meta/migrations.js';
import type { Registry } from '../meta/registry.js';
import { syncEntitySchema } from '../meta/schema.js';
import type { MonitorService } from '../monitor/service.js';
import type { NotificationService } from '../notifications/service.js';
import type { StorageService } from '../storage/service.js';
import type { Health } from '../subsystems.js';
import { decodeScopeName, validateScope } from '../../shared/scope-path.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { BackupConfigStore, type BackupConfig } from './config.js';
import { applyRetention, backupPath, listBackups, newBackupName, readSidecar, sha256Of, writeSidecar, type BackupFileInfo, type BackupKind } from './files.js';
import { clearMarker, swapBack, swapIn, writeMarker, type RestoreMarker } from './restore-marker.js';
import { fsyncDir } from '../../shared/fsync-dir.js';

export interface BackupServiceOptions {
  config: Config;
  db: Db;
  registry: Registry;
  storage: StorageService;
  accounts: AccountStore;
  tokens: TokenService;
  notifications: NotificationService;
  monitor: MonitorService;
  jobs: JobLog;
  clock: ServiceClock;
  log: Logger;
}

export interface BackupResult {
  ok: boolean;
  file_name: string | null;
  error: string | null;
  at_ms: number;
  duration_ms: number;
}

interface BackupState {
  last_backup_ms: number | null;
  last_sqlite: BackupResult | null;
  last_timeseries: BackupResult | null;
}

/** The manifest of a time-series backup, its first tar entry. */
interface Manifest {
  format: 1;
  kind: 'timeseries';
  created_ms: number;
  files: Array<{ path: string; size: number; sha256: string }>;
  collections: Array<{ id: string; points: number; first_ms: number | null; last_ms: number | null }>;
}

const STATE_FILE = 'backup-state.json';
const MANIFEST = 'manifest.json';
/** A scheduled backup that came due while the service was down runs this long after start. */
const OVERDUE_DELAY_MS = 60_000;

export class BackupService {
  readonly config: BackupConfigStore;
  private state: BackupState;
  /** The backup or restore under way. */
  private busy: { what: 'backup' | 'restore'; jobId: string } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextBackupMs: number | null = null;
  private stopped = false;

  constructor(private readonly o: BackupServiceOptions) {
    this.config = new BackupConfigStore(o.config.dataDir);
    this.state = this.readState();
  }

  // ---- lifecycle ------------------------------------------------------------

  start(): void {
    if (!this.o.storage.isRunning) throw new Error('the storage subsystem is not running, so no time-series backup can be taken');
    // Staging folders of backups a crash interrupted (a restore's are its marker's business).
    for (const name of fs.readdirSync(this.o.config.dataDir)) {
      if (name.startsWith('backup-staging-') || name.startsWith('restore-sqlite-')) fs.rmSync(path.join(this.o.config.dataDir, name), { recursive: true, force: true });
    }
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  health(): Health {
    const failed = [this.state.last_sqlite, this.state.last_timeseries].filter((r) => r && !r.ok);
    if (failed.length > 0) return { status: 'degraded', reason: `last backup failed: ${failed.map((r) => r!.error).join('; ')}` };
    return { status: 'ok' };
  }

  /** Why mutating requests must wait now (a restore is replacing a store), or null. */
  maintenanceReason(): string | null {
    return this.busy?.what === 'restore' ? 'a restore is running; retry when it has finished' : null;
  }

  // ---- status, config, list -------------------------------------------------

  status() {
    return {
      running: this.busy?.what === 'backup',
      last_backup_ms: this.state.last_backup_ms,
      next_backup_ms: this.config.get().enabled ? this.nextBackupMs : null,
      last_sqlite: this.state.last_sqlite,
      last_timeseries: this.state.last_timeseries,
    };
  }

  updateConfig(change: unknown): BackupConfig {
    const config = this.config.update(change);
    this.schedule();
    return config;
  }

  async list(): Promise<{ sqlite_backups: BackupFileInfo[]; timeseries_backups: BackupFileInfo[] }> {
    const lists = await listBackups(this.config.directory());
    return { sqlite_backups: lists.sqlite, timeseries_backups: lists.timeseries };
  }

  // ---- backups --------------------------------------------------------------

  /** Starts a backup now; answers its job id at once (409 while a backup or restore runs). */
  run(kind: 'sqlite' | 'timeseries' | 'all', by: string): string {
    const job = this.claim('backup', `${kind} backup (by ${by})`);
    void this.backup(kind, job);
    return job.id;
  }

  private claim(what: 'backup' | 'restore', message: string): Job {
    if (this.busy) throw conflict(`a ${this.busy.what} is already running (job ${this.busy.jobId}); retry when it has finished`);
    const job = this.o.jobs.begin(what, message);
    this.busy = { what, jobId: job.id };
    return job;
  }

  private async backup(kind: 'sqlite' | 'timeseries' | 'all', job: Job): Promise<void> {
    const errors: string[] = [];
    try {
      const dir = this.config.directory();
      const config = this.config.get();
      // Each kind asked for gets its own result, also when the directory cannot be made.
      const inDir = <T>(work: () => Promise<T>) => async () => {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        return work();
      };
      if (kind !== 'timeseries') {
        const result = await this.attempt('sqlite', inDir(() => this.backupSqlite(dir, job, kind === 'all' ? 0.1 : 1)));
        if (!result.ok) errors.push(`sqlite: ${result.error}`);
        else await applyRetention(dir, 'sqlite', config.keep_sqlite);
      }
      if (kind !== 'sqlite') {
        const result = await this.attempt('timeseries', inDir(() => this.backupTimeseries(dir, job, kind === 'all' ? 0.1 : 0)));
        if (!result.ok) errors.push(`timeseries: ${result.error}`);
        else await applyRetention(dir, 'timeseries', config.keep_timeseries);
      }
    } catch (err) {
      errors.push((err as Error).message);
    } finally {
      this.state.last_backup_ms = this.o.clock.now();
      this.writeState();
      this.busy = null;
      this.schedule();
    }
    if (errors.length === 0) {
      job.done(`${kind} backup written to ${this.config.directory()}`);
      return;
    }
    const error = errors.join('; ');
    job.fail(error);
    this.tellAdmins(`Backup failed: ${error}`);
  }

  /** Runs one kind's backup and records its result (status.last_*). */
  private async attempt(kind: BackupKind, work: () => Promise<BackupFileInfo>): Promise<BackupResult> {
    const began = this.o.clock.now();
    let result: BackupResult;
    try {
      const info = await work();
      result = { ok: true, file_name: info.file_name, error: null, at_ms: this.o.clock.now(), duration_ms: this.o.clock.now() - began };
      this.o.log.info({ kind, file: info.file_name, bytes: info.size_bytes, ms: result.duration_ms }, 'backup written');
    } catch (err) {
      result = { ok: false, file_name: null, error: (err as Error).message, at_ms: this.o.clock.now(), duration_ms: this.o.clock.now() - began };
      this.o.log.error({ kind, err: String(err) }, 'backup failed');
    }
    if (kind === 'sqlite') this.state.last_sqlite = result;
    else this.state.last_timeseries = result;
    this.writeState();
    return result;
  }

  private async backupSqlite(dir: string, job: Job, share: number): Promise<BackupFileInfo> {
    const createdMs = this.o.clock.now();
    const name = newBackupName(dir, 'sqlite', createdMs);
    const partial = path.join(dir, `${name}.partial`);
    try {
      job.progress(0, `sqlite: copying the metadata store to ${name}`);
      await this.o.db.backup(partial, {
        progress: ({ totalPages, remainingPages }) => {
          job.progress(share * (1 - remainingPages / Math.max(1, totalPages)));
          return 200;
        },
      });
      // A plain one-file database (the copy keeps the live one's WAL mode otherwise).
      const copy = new Database(partial);
      try {
        copy.pragma('journal_mode = DELETE');
      } finally {
        copy.close();
      }
      fs.chmodSync(partial, PRIVATE_FILE_MODE);
      await fsyncFile(partial);
      fs.renameSync(partial, path.join(dir, name));
      fsyncDir(dir);
      const info: BackupFileInfo = { file_name: name, kind: 'sqlite', size_bytes: fs.statSync(path.join(dir, name)).size, created_ms: createdMs, sha256: await sha256Of(path.join(dir, name)) };
      writeSidecar(dir, info);
      return info;
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw err;
    }
  }

  private async backupTimeseries(dir: string, job: Job, from: number): Promise<BackupFileInfo> {
    const createdMs = this.o.clock.now();
    const name = newBackupName(dir, 'timeseries', createdMs);
    const staging = path.join(this.o.config.dataDir, `backup-staging-${job.id}`);
    const partial = path.join(dir, `${name}.partial`);
    try {
      fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
      job.progress(from, 'timeseries: marking the instant of the backup');
      const mark = await this.o.storage.backupMark(staging);
      const totalBytes = mark.files.reduce((n, f) => n + f.size, 0);
      let doneBytes = 0;
      const files: Manifest['files'] = [];
      for (const file of mark.files) {
        const staged = path.join(staging, file.path);
        // A day log's link sees what was appended after the instant: keep the bytes before it.
        if (file.growing) await cutCopy(staged, file.size);
        files.push({ path: file.path, size: file.size, sha256: await sha256Of(staged) });
        doneBytes += file.size;
        job.progress(from + (1 - from) * 0.5 * (doneBytes / Math.max(1, totalBytes)), `timeseries: checksums (${files.length} of ${mark.files.length} files)`);
      }
      const manifest: Manifest = { format: 1, kind: 'timeseries', created_ms: createdMs, files, collections: mark.collections };
      fs.writeFileSync(path.join(staging, MANIFEST), JSON.stringify(manifest), { mode: PRIVATE_FILE_MODE });
      job.progress(from + (1 - from) * 0.5, `timeseries: packing ${mark.files.length} files into ${name}`);
      // The tar is hashed as it is written (one pass over the data, not a second read).
      const hash = crypto.createHash('sha256');
      let size = 0;
      const counted = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          hash.update(chunk);
          size += chunk.length;
          done(null, chunk);
        },
      });
      await pipeline(
        tar.c({ cwd: staging, portable: true, noDirRecurse: true }, [MANIFEST, ...files.map((f) => f.path)]),
        counted,
        fs.createWriteStream(partial, { mode: PRIVATE_FILE_MODE }),
      );
      await fsyncFile(partial);
      fs.renameSync(partial, path.join(dir, name));
      fsyncDir(dir);
      const points = mark.collections.reduce((n, c) => n + c.points, 0);
      const info: BackupFileInfo = {
        file_name: name, kind: 'timeseries', size_bytes: size, created_ms: createdMs,
        sha256: hash.digest('hex'), collections: mark.collections.length, points,
      };
      writeSidecar(dir, info);
      return info;
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw err;
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
  }

  // ---- restores -------------------------------------------------------------

  /** Restores the metadata store from a sqlite backup; answers when it is done (400 when the file fails verification). */
  async restoreSqlite(fileName: unknown, by: string) {
    const file = backupPath(this.config.directory(), fileName, 'sqlite');
    const job = this.claim('restore', `restore of ${String(fileName)} (by ${by})`);
    const copy = path.join(this.o.config.dataDir, `restore-sqlite-${job.id}.sqlite`);
    try {
      job.progress(0.05, 'verifying');
      await this.verifyChecksum(file);
      fs.copyFileSync(file, copy);
      fs.chmodSync(copy, PRIVATE_FILE_MODE);
      this.prepareSqliteCopy(copy, path.basename(file));
      job.progress(0.5, 'swapping');
      await this.stepDelay();
      const restored = this.swapSqlite(copy);
      const message = `restored ${restored.tables} tables, ${restored.rows} rows from ${path.basename(file)}`;
      job.done(message);
      this.o.log.warn({ file: path.basename(file), ...restored, by }, 'metadata store restored from a backup');
      return { success: true, message, job_id: job.id, file_name: path.basename(file), restored: { kind: 'sqlite', ...restored } };
    } catch (err) {
      job.fail((err as Error).message);
      throw err;
    } finally {
      fs.rmSync(copy, { force: true });
      fs.rmSync(`${copy}-journal`, { force: true });
      this.busy = null;
    }
  }

  /** Restores the time-series store from a timeseries backup; answers when it is done. */
  async restoreTimeseries(fileName: unknown, by: string) {
    const file = backupPath(this.config.directory(), fileName, 'timeseries');
    const job = this.claim('restore', `restore of ${String(fileName)} (by ${by})`);
    return this.installTimeseries(file, job, by, true);
  }

  /**
   * A cluster's snapshot, leader side: a timeseries archive of this node's store (the format of a
   * timeseries backup) written into `dir`, a directory of the caller's; the caller removes it.
   */
  async snapshotTimeseries(dir: string, by: string): Promise<BackupFileInfo> {
    const job = this.claim('backup', `timeseries snapshot for ${by}`);
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const info = await this.backupTimeseries(dir, job, 0);
      job.done(`timeseries snapshot for ${by}: ${info.collections} collections, ${info.points} points, ${info.size_bytes} bytes`);
      return info;
    } catch (err) {
      job.fail((err as Error).message);
      throw err;
    } finally {
      this.busy = null;
    }
  }

  /** A cluster's snapshot, receiving side: replaces the time-series store by a snapshot archive (every file checked against its manifest). */
  async installTimeseriesSnapshot(file: string, from: string) {
    const job = this.claim('restore', `timeseries snapshot from ${from}`);
    return this.installTimeseries(file, job, from, false);
  }

  private async installTimeseries(file: string, job: Job, by: string, checksum: boolean) {
    const dataDir = this.o.config.dataDir;
    const marker: RestoreMarker = { id: job.id, phase: 'prepared', staging: `restore-staging-${job.id}`, previous: `ts-before-restore-${job.id}` };
    const staging = path.join(dataDir, marker.staging);
    let markerWritten = false;
    try {
      job.progress(0.02, 'verifying');
      if (checksum) await this.verifyChecksum(file);
      const manifest = await this.unpackVerified(file, staging, job);
      writeMarker(dataDir, marker);
      markerWritten = true;
      job.progress(0.8, 'swapping');
      const { collections } = await this.o.storage.withStoreDetached(async () => {
        writeMarker(dataDir, { ...marker, phase: 'swapping' });
        try {
          await swapIn(dataDir, marker, () => this.stepDelay());
        } catch (err) {
          swapBack(dataDir, marker);
          throw err;
        }
        writeMarker(dataDir, { ...marker, phase: 'committed' });
      });
      const points = manifest.collections.reduce((n, c) => n + c.points, 0);
      const message = `restored ${collections} collections, ${points} points from ${path.basename(file)}`;
      job.done(message);
      this.o.log.warn({ file: path.basename(file), collections, points, by }, 'time-series store restored from a backup');
      return { success: true, message, job_id: job.id, file_name: path.basename(file), restored: { kind: 'timeseries', collections, points } };
    } catch (err) {
      job.fail((err as Error).message);
      throw err;
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
      fs.rmSync(path.join(dataDir, marker.previous), { recursive: true, force: true });
      if (markerWritten) clearMarker(dataDir);
      this.busy = null;
    }
  }

  /** 400 when the file's sha256 differs from the one recorded when it was written. */
  private async verifyChecksum(file: string): Promise<void> {
    const info = readSidecar(path.dirname(file), path.basename(file));
    if (!info) return; // a backup copied in by hand: its content checks below still apply
    const actual = await sha256Of(file);
    if (actual !== info.sha256) throw failedVerification(file, `sha256 is ${actual}, the backup was written with ${info.sha256}`);
  }

  /** Checks a copy of a sqlite backup and brings it to this build's schema; 400 when it is not a sound metadata store. */
  private prepareSqliteCopy(copy: string, name: string): void {
    let db: Database.Database;
    try {
      db = new Database(copy, { fileMustExist: true });
    } catch (err) {
      throw failedVerification(name, `not a SQLite database (${(err as Error).message})`);
    }
    try {
      let check: unknown;
      try {
        check = db.pragma('integrity_check', { simple: true });
      } catch (err) {
        throw failedVerification(name, `integrity_check could not run (${(err as Error).message})`);
      }
      if (check !== 'ok') throw failedVerification(name, `integrity_check says ${String(check)}`);
      const version = db.pragma('user_version', { simple: true }) as number;
      if (version > MIGRATIONS.length) throw failedVerification(name, `it is at schema version ${version}, newer than this build (${MIGRATIONS.length})`);
      if (version < 1 || !db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'users'").get()) throw failedVerification(name, 'it is not a metadata store of this service');
      db.pragma('journal_mode = DELETE');
      migrate(db);
      syncEntitySchema(db, this.o.registry);
    } finally {
      db.close();
    }
  }

  /**
   * Replaces every row of the live store by the prepared copy's, in one transaction on the main
   * connection, and rebuilds what mirrors the store, all in this turn of the event loop.
   */
  private swapSqlite(copy: string): { tables: number; rows: number } {
    const db = this.o.db;
    this.o.notifications.hub.storeReplaced();
    db.prepare('ATTACH DATABASE ? AS restored').run(copy);
    let tables = 0;
    let rows = 0;
    try {
      const names = db.prepare("SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[];
      const restoredNames = new Set(db.prepare("SELECT name FROM restored.sqlite_master WHERE type = 'table'").pluck().all() as string[]);
      const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;
      db.transaction(() => {
        db.pragma('defer_foreign_keys = ON');
        for (const name of names) {
          db.prepare(`DELETE FROM main.${quote(name)}`).run();
          if (!restoredNames.has(name)) continue;
          const restoredColumns = new Set((db.prepare(`PRAGMA restored.table_info(${quote(name)})`).all() as Array<{ name: string }>).map((c) => c.name));
          const columns = (db.prepare(`PRAGMA main.table_info(${quote(name)})`).all() as Array<{ name: string }>).map((c) => c.name).filter((c) => restoredColumns.has(c));
          const list = columns.map(quote).join(', ');
          rows += db.prepare(`INSERT INTO main.${quote(name)} (${list}) SELECT ${list} FROM restored.${quote(name)}`).run().changes;
          tables++;
        }
        if (restoredNames.has('sqlite_sequence')) {
          db.prepare('DELETE FROM main.sqlite_sequence').run();
          db.prepare('INSERT INTO main.sqlite_sequence (name, seq) SELECT name, seq FROM restored.sqlite_sequence').run();
        }
      })();
    } finally {
      db.prepare('DETACH DATABASE restored').run();
    }
    this.o.accounts.forgetAll();
    this.o.tokens.forgetAll();
    this.o.storage.tagScopes.notifyChanged();
    this.o.monitor.reload();
    this.o.jobs.rewriteAfterRestore();
    return { tables, rows };
  }

  /** Unpacks a timeseries tar into `staging` and checks it against its manifest; 400 on any mismatch. */
  private async unpackVerified(file: string, staging: string, job: Job): Promise<Manifest> {
    const name = path.basename(file);
    // Entry names and sizes first, so nothing is written for a tar with paths out of place or too much in it.
    const entries = new Map<string, number>();
    const odd: string[] = [];
    let claimed = 0;
    try {
      await tar.t({
        file,
        strict: true,
        // Never throw in here: node-tar does not turn it into a rejection (it would be uncaught).
        onReadEntry: (entry) => {
          if (entry.type === 'File' || entry.type === 'OldFile') entries.set(entry.path, entry.size ?? 0);
          else if (entry.type !== 'Directory') odd.push(`${entry.path} (${entry.type})`);
          claimed += entry.size ?? 0;
        },
      });
    } catch (err) {
      throw failedVerification(name, `the tar cannot be read (${(err as Error).message})`);
    }
    if (odd.length > 0) throw failedVerification(name, `entry ${odd[0]} is not a plain file`);
    if (claimed > this.o.config.backup.maxRestoreBytes) throw failedVerification(name, `it holds ${claimed} bytes, more than backup.maxRestoreBytes (${this.o.config.backup.maxRestoreBytes})`);
    for (const entry of entries.keys()) {
      if (entry !== MANIFEST && !isStorePath(entry)) throw failedVerification(name, `entry ${JSON.stringify(entry)} is not a file of the time-series store`);
    }
    if (!entries.has(MANIFEST)) throw failedVerification(name, `it has no ${MANIFEST}`);
    fs.rmSync(staging, { recursive: true, force: true });
    fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
    job.progress(0.1, 'unpacking');
    try {
      await tar.x({ file, cwd: staging, strict: true, preservePaths: false, preserveOwner: false });
    } catch (err) {
      throw failedVerification(name, `the tar cannot be unpacked (${(err as Error).message})`);
    }
    let manifest: Manifest;
    try {
      manifest = JSON.parse(fs.readFileSync(path.join(staging, MANIFEST), 'utf8')) as Manifest;
    } catch (err) {
      throw failedVerification(name, `${MANIFEST} is not JSON (${(err as Error).message})`);
    }
    if (manifest.format !== 1 || manifest.kind !== 'timeseries' || !Array.isArray(manifest.files) || !Array.isArray(manifest.collections)) {
      throw failedVerification(name, `${MANIFEST} is not a format 1 time-series manifest`);
    }
    const listed = new Set<string>();
    let doneBytes = 0;
    const totalBytes = manifest.files.reduce((n, f) => n + (typeof f.size === 'number' ? f.size : 0), 0);
    for (const entry of manifest.files) {
      if (typeof entry?.path !== 'string' || !isStorePath(entry.path)) throw failedVerification(name, `${MANIFEST} lists ${JSON.stringify(entry?.path)}, not a file of the store`);
      const staged = path.join(staging, entry.path);
      let size: number;
      try {
        size = fs.statSync(staged).size;
      } catch {
        throw failedVerification(name, `${entry.path} is listed in ${MANIFEST} but missing`);
      }
      if (size !== entry.size) throw failedVerification(name, `${entry.path} has ${size} bytes, ${MANIFEST} says ${entry.size}`);
      if ((await sha256Of(staged)) !== entry.sha256) throw failedVerification(name, `${entry.path} does not match its sha256 in ${MANIFEST}`);
      listed.add(entry.path);
      doneBytes += size;
      job.progress(0.1 + 0.6 * (doneBytes / Math.max(1, totalBytes)), 'verifying checksums');
    }
    for (const entry of entries.keys()) {
      if (entry !== MANIFEST && !listed.has(entry)) throw failedVerification(name, `${entry} is in the tar but not in ${MANIFEST}`);
    }
    fs.rmSync(path.join(staging, MANIFEST));
    return manifest;
  }

  private async stepDelay(): Promise<void> {
    const ms = this.o.config.debug.restoreStepDelayMs;
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  }

  // ---- schedule, state, notifications ----------------------------------------

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const config = this.config.get();
    if (!config.enabled || this.stopped) {
      this.nextBackupMs = null;
      return;
    }
    const now = this.o.clock.now();
    const interval = config.interval_hours * 3_600_000;
    const last = this.state.last_backup_ms;
    this.nextBackupMs = last === null ? now + interval : Math.max(last + interval, now + (last + interval < now ? OVERDUE_DELAY_MS : 0));
    if (this.busy) return; // scheduled again when it ends
    // Timers hold at most 2^31-1 ms; a longer wait is taken in steps.
    this.timer = setTimeout(() => this.scheduledRun(), Math.min(2 ** 31 - 1, Math.max(0, this.nextBackupMs - now)));
    this.timer.unref();
  }

  private scheduledRun(): void {
    this.timer = null;
    if (this.nextBackupMs !== null && this.o.clock.now() < this.nextBackupMs) return this.schedule();
    try {
      this.run('all', 'schedule');
    } catch (err) {
      if (!(err instanceof ServiceError)) throw err;
      this.schedule(); // a restore is running: try again at the next interval
    }
  }

  private tellAdmins(title: string): void {
    try {
      const admins = this.o.db.prepare("SELECT email FROM users WHERE CASE WHEN json_valid(meta_data) THEN json_extract(meta_data, '$.role') END = 'admin'").pluck().all() as string[];
      for (const email of admins) {
        this.o.notifications.notify({ userId: email, severity: 'error', source: 'backup', title: truncate(title, 120), body: truncate(title, 2048) });
      }
    } catch (err) {
      this.o.log.error({ err: String(err) }, 'could not notify the admins of a failed backup');
    }
  }

  private readState(): BackupState {
    try {
      const state = JSON.parse(fs.readFileSync(path.join(this.o.config.dataDir, STATE_FILE), 'utf8')) as BackupState;
      return { last_backup_ms: state.last_backup_ms ?? null, last_sqlite: state.last_sqlite ?? null, last_timeseries: state.last_timeseries ?? null };
    } catch {
      return { last_backup_ms: null, last_sqlite: null, last_timeseries: null };
    }
  }

  private writeState(): void {
    const file = path.join(this.o.config.dataDir, STATE_FILE);
    try {
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(this.state), { mode: PRIVATE_FILE_MODE });
      fs.renameSync(`${file}.tmp`, file);
    } catch (err) {
      this.o.log.warn({ err: String(err) }, 'backup state not written');
    }
  }
}

function failedVerification(file: string, why: string): ServiceError {
  return badRequest(`backup ${path.basename(file)} failed verification: ${why}`);
}

/** `ts/<org>/<site>/<unit>/<grid>/<file>` with encoded names, as the store lays them out. */
function isStorePath(entry: string): boolean {
  const parts = entry.split('/');
  if (parts.length !== 6 || parts[0] !== 'ts') return false;
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return false;
  try {
    const [organization, site, unit, grid] = parts.slice(1, 5).map(decodeScopeName);
    validateScope({ organization, site, unit, grid });
  } catch {
    return false;
  }
  return /^(meta\.json|(active|late)-\d{8,}\.log|sealed-\d{8,}\.hsd)$/.test(parts[5]);
}

/**
 * Replaces a hard link by a copy of its first `size` bytes (the day log goes on growing): a
 * kernel-side copy off the main thread, then cut to length.
 */
async function cutCopy(file: string, size: number): Promise<void> {
  const tmp = `${file}.cut`;
  await fs.promises.copyFile(file, tmp);
  await fs.promises.truncate(tmp, size);
  if ((await fs.promises.stat(tmp)).size !== size) throw new Error(`${file} is shorter than its marked ${size} bytes`);
  await fs.promises.rename(tmp, file);
}

/** fsync off the main thread (a large file's flush takes hundreds of milliseconds). */
async function fsyncFile(file: string): Promise<void> {
  const handle = await fs.promises.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function truncate(text: string, bytes: number): string {
  let out = text;
  while (Buffer.byteLength(out) > bytes) out = out.slice(0, -1);
  return out;
}
