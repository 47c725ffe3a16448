// Backups and restores (WIRE.md part 2 "Backup"), one at a time, each a process-log job, and the
// schedule of backups.
//
// - SQLite: the online backup API of the connection that writes (WholeStore.backupTo), so the
//   copy is one consistent state while writes go on; the copy is then a plain one-file database.
// - Time series: archives of one instant (timeseries.ts).
// - Restoring SQLite copies the backup's rows into the live database in one transaction on the
//   main connection (WholeStore.replaceFrom, after bringing a copy to this build's schema), so
//   every holder of the connection sees the restored store at once and a crash leaves the old or
//   the new, by SQLite's own atomicity; this node's own cluster bookkeeping is kept. The caches
//   that mirror the store follow the store's events in the same turn.
// - Secrets (secrets.ts): a sqlite backup taken with a passphrase carries the files of secrets/
//   that the restored rows need on another host, sealed with it; a restore given the passphrase
//   writes them back in the same step as the rows and the running service uses them at once.
// - Restoring time series: timeseries.ts.
//
// Every verification happens before anything live is touched: a file that fails one leaves the
// live store as it was.

import fs from 'node:fs';
import path from 'node:path';
import type { ServiceClock } from '../clock.js';
import type { Health } from '../host/plugin.js';
import type { Job, ProcessLog } from '../jobs/api.js';
import type { BlobContents } from '../files/api.js';
import type { Logger } from '../log.js';
import { readSealedSecrets, writeSealedSecrets } from '../meta/backup-secrets.js';
import { UnsoundCopyError, type WholeStore } from '../meta/whole-store.js';
import type { Notify } from '../notifications/api.js';
import type { StoreMaintenance } from '../storage/api.js';
import { ServiceError, badRequest, conflict } from '../../shared/errors.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { fsyncDir } from '../../shared/fsync-dir.js';
import { BackupConfigStore, type BackupConfig } from './config.js';
import { anyBackupPath, applyRetention, backupPath, listBackups, newBackupName, readSidecar, sha256Of, writeSidecar, type BackupFileInfo, type BackupKind } from './files.js';
import { forgetPartial, notePartial, removeLeftovers } from './leftovers.js';
import { checkPassphrase, cleanSecretLeftovers, openSecrets, sealSecrets, StagedSecrets } from './secrets.js';
import { failedVerification, fsyncFile, TimeseriesArchives } from './timeseries.js';

export interface BackupServiceOptions {
  settings: {
    dataDir: string;
    /** backup.maxRestoreBytes */
    maxRestoreBytes: number;
    /** debug.restoreStepDelayMs */
    restoreStepDelayMs: number;
  };
  store: WholeStore;
  maintenance: StoreMaintenance;
  contents: BlobContents;
  notify: Notify;
  jobs: ProcessLog;
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

const STATE_FILE = 'backup-state.json';
/** A scheduled backup that came due while the service was down runs this long after start. */
const OVERDUE_DELAY_MS = 60_000;

export class BackupService {
  readonly config: BackupConfigStore;
  private state: BackupState;
  /** The backup or restore under way (a restore's `store` is the one it replaces). */
  private busy: { what: 'backup' | 'restore'; jobId: string; store?: BackupKind } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private nextBackupMs: number | null = null;
  private stopped = false;
  private readonly archives: TimeseriesArchives;
  /** The last backup of each kind that succeeded (the state file keeps only the last attempt), for GET /metrics. */
  private readonly lastSuccess: Record<BackupKind, BackupResult | null>;

  constructor(private readonly o: BackupServiceOptions) {
    this.config = new BackupConfigStore(o.settings.dataDir);
    this.state = this.readState();
    this.lastSuccess = { sqlite: this.state.last_sqlite?.ok ? this.state.last_sqlite : null, timeseries: this.state.last_timeseries?.ok ? this.state.last_timeseries : null };
    this.archives = new TimeseriesArchives({
      dataDir: o.settings.dataDir,
      maintenance: o.maintenance,
      contents: o.contents,
      maxRestoreBytes: o.settings.maxRestoreBytes,
      stepDelay: () => this.stepDelay(),
      now: o.clock.now,
    });
  }

  // ---- lifecycle ------------------------------------------------------------

  start(): void {
    removeLeftovers(this.o.settings.dataDir, this.o.log);
    cleanSecretLeftovers(this.o.settings.dataDir, this.o.log);
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

  /**
   * Why mutating requests must wait now (a restore is replacing the metadata store), or null. A
   * time-series restore holds up only changes to the time series (the storage gate answers
   * those, StoreMaintenance.beginRestore): logins and metadata go on.
   */
  maintenanceReason(): string | null {
    return this.busy?.what === 'restore' && this.busy.store === 'sqlite' ? 'a restore of the metadata store is running; retry when it has finished' : null;
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

  /** Per kind: its last attempt and its last success (known since the last attempt that is in the state file). */
  results(): Array<{ kind: BackupKind; last: BackupResult | null; lastSuccess: BackupResult | null }> {
    return [
      { kind: 'sqlite', last: this.state.last_sqlite, lastSuccess: this.lastSuccess.sqlite },
      { kind: 'timeseries', last: this.state.last_timeseries, lastSuccess: this.lastSuccess.timeseries },
    ];
  }

  get running(): boolean {
    return this.busy?.what === 'backup';
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

  /** A backup file to download: its path, size and sha256 (recorded when it was written, else computed now). */
  async downloadable(fileName: string): Promise<{ file: string; size: number; sha256: string }> {
    const dir = this.config.directory();
    const { file } = anyBackupPath(dir, fileName);
    const sha256 = readSidecar(dir, fileName)?.sha256 ?? (await sha256Of(file));
    return { file, size: fs.statSync(file).size, sha256 };
  }

  // ---- backups --------------------------------------------------------------

  /**
   * Starts a backup now; answers its job id at once (409 while a backup or restore runs). With
   * `secretsPassphrase` the sqlite backup carries the secrets, sealed with it (400 for kind
   * timeseries: the secrets travel in the sqlite backup).
   */
  run(kind: 'sqlite' | 'timeseries' | 'all', by: string, secretsPassphrase?: unknown): string {
    const passphrase = checkPassphrase(secretsPassphrase);
    if (passphrase !== undefined && kind === 'timeseries') throw badRequest('secrets_passphrase goes with kind sqlite or all: the secrets travel in the sqlite backup');
    const job = this.claim('backup', `${kind} backup${passphrase !== undefined ? ' with secrets' : ''} (by ${by})`);
    void this.backup(kind, job, passphrase);
    return job.id;
  }

  private claim(what: 'backup' | 'restore', message: string, store?: BackupKind): Job {
    if (this.busy) throw conflict(`a ${this.busy.what} is already running (job ${this.busy.jobId}); retry when it has finished`);
    const job = this.o.jobs.begin(what, message);
    this.busy = { what, jobId: job.id, store };
    return job;
  }

  private async backup(kind: 'sqlite' | 'timeseries' | 'all', job: Job, passphrase?: string): Promise<void> {
    const errors: string[] = [];
    // From before the sqlite backup: no content file it names can go before the archive has it.
    const releaseContents = kind !== 'sqlite' ? this.o.contents.hold() : null;
    try {
      const dir = this.config.directory();
      const config = this.config.get();
      // Each kind asked for gets its own result, also when the directory cannot be made.
      const inDir = <T>(work: () => Promise<T>) => async () => {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
        return work();
      };
      if (kind !== 'timeseries') {
        const result = await this.attempt('sqlite', inDir(() => this.backupSqlite(dir, job, kind === 'all' ? 0.1 : 1, passphrase)));
        if (!result.ok) errors.push(`sqlite: ${result.error}`);
        else await applyRetention(dir, 'sqlite', config.keep_sqlite);
      }
      if (kind !== 'sqlite') {
        const result = await this.attempt('timeseries', inDir(() => this.archives.write(dir, job, kind === 'all' ? 0.1 : 0, true)));
        if (!result.ok) errors.push(`timeseries: ${result.error}`);
        else await applyRetention(dir, 'timeseries', config.keep_timeseries);
      }
    } catch (err) {
      errors.push((err as Error).message);
    } finally {
      releaseContents?.();
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
    if (result.ok) this.lastSuccess[kind] = result;
    this.writeState();
    return result;
  }

  private async backupSqlite(dir: string, job: Job, share: number, passphrase: string | undefined): Promise<BackupFileInfo> {
    const createdMs = this.o.clock.now();
    const name = newBackupName(dir, 'sqlite', createdMs);
    const partial = path.join(dir, `${name}.partial`);
    notePartial(this.o.settings.dataDir, partial);
    try {
      job.progress(0, `sqlite: copying the metadata store to ${name}`);
      await this.o.store.backupTo(partial, (done) => job.progress(share * done));
      let secrets: string[] = [];
      if (passphrase !== undefined) {
        job.progress(share * 0.95, 'sqlite: sealing the secrets into the backup');
        const sealed = await sealSecrets(this.o.settings.dataDir, passphrase);
        writeSealedSecrets(partial, sealed.row);
        secrets = sealed.names;
      }
      fs.chmodSync(partial, PRIVATE_FILE_MODE);
      await fsyncFile(partial);
      fs.renameSync(partial, path.join(dir, name));
      fsyncDir(dir);
      const info: BackupFileInfo = { file_name: name, kind: 'sqlite', size_bytes: fs.statSync(path.join(dir, name)).size, created_ms: createdMs, sha256: await sha256Of(path.join(dir, name)) };
      if (secrets.length > 0) {
        info.secrets = true;
        this.o.log.info({ file: name, secrets }, 'sqlite backup carries secrets, sealed with the passphrase given');
      }
      writeSidecar(dir, info);
      return info;
    } catch (err) {
      fs.rmSync(partial, { force: true });
      throw err;
    } finally {
      forgetPartial(this.o.settings.dataDir, partial);
    }
  }

  // ---- restores -------------------------------------------------------------

  /**
   * Restores the metadata store from a sqlite backup; answers when it is done (400 when the file
   * fails verification). With `secretsPassphrase` the backup's secrets are restored too (400 when
   * it has none or the passphrase does not open them, before anything live is touched).
   */
  async restoreSqlite(fileName: unknown, by: string, secretsPassphrase?: unknown) {
    const passphrase = checkPassphrase(secretsPassphrase);
    const file = backupPath(this.config.directory(), fileName, 'sqlite');
    const job = this.claim('restore', `restore of ${String(fileName)}${passphrase !== undefined ? ' with its secrets' : ''} (by ${by})`, 'sqlite');
    const copy = path.join(this.o.settings.dataDir, `restore-sqlite-${job.id}.sqlite`);
    let staged: StagedSecrets | null = null;
    try {
      job.progress(0.05, 'verifying');
      await this.verifyChecksum(file);
      fs.copyFileSync(file, copy);
      fs.chmodSync(copy, PRIVATE_FILE_MODE);
      try {
        this.o.store.prepareCopy(copy);
      } catch (err) {
        if (err instanceof UnsoundCopyError) throw failedVerification(file, err.message);
        throw err;
      }
      const sealed = readSealedSecrets(copy);
      if (passphrase !== undefined) {
        if (!sealed) throw badRequest(`secrets_passphrase was given, but backup ${path.basename(file)} carries no secrets (it was taken without one); nothing was restored`);
        job.progress(0.3, 'opening the secrets');
        staged = new StagedSecrets(this.o.settings.dataDir, await openSecrets(sealed, passphrase, path.basename(file)), job.id);
      }
      job.progress(0.5, 'swapping');
      await this.stepDelay();
      // Every row in one transaction, this node's own bookkeeping kept, the secrets renamed into
      // place as its last step; the caches follow the store's events (the key is reloaded before).
      let committed = false;
      let restored: { tables: number; rows: number };
      try {
        restored = this.o.store.replaceFrom(copy, {
          inside: () => staged?.install(),
          committed: () => {
            committed = true;
            staged?.finish();
          },
        });
      } catch (err) {
        if (!committed) staged?.undo();
        throw err;
      }
      const secretsRestored = staged !== null;
      const secretsNote = secretsRestored ? '; its secrets restored and in use' : sealed ? '; it carries secrets, not restored (give secrets_passphrase to restore them)' : '';
      const message = `restored ${restored.tables} tables, ${restored.rows} rows from ${path.basename(file)}${secretsNote}`;
      job.done(message);
      this.o.log.warn({ file: path.basename(file), ...restored, secrets_restored: secretsRestored, by }, 'metadata store restored from a backup');
      return { success: true, message, job_id: job.id, file_name: path.basename(file), secrets_restored: secretsRestored, restored: { kind: 'sqlite', ...restored } };
    } catch (err) {
      job.fail((err as Error).message);
      throw err;
    } finally {
      staged?.discard();
      fs.rmSync(copy, { force: true });
      fs.rmSync(`${copy}-journal`, { force: true });
      this.busy = null;
    }
  }

  /** Restores the time-series store from a timeseries backup; answers when it is done. */
  async restoreTimeseries(fileName: unknown, by: string) {
    const file = backupPath(this.config.directory(), fileName, 'timeseries');
    const job = this.claim('restore', `restore of ${String(fileName)} (by ${by})`, 'timeseries');
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
      // A node's blob rows are its own (not replicated), so a snapshot carries no content files.
      const info = await this.archives.write(dir, job, 0, false);
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
    const job = this.claim('restore', `timeseries snapshot from ${from}`, 'timeseries');
    return this.installTimeseries(file, job, from, false);
  }

  private async installTimeseries(file: string, job: Job, by: string, checksum: boolean) {
    // From the first check on: a change to the time series made meanwhile would be swapped away.
    const restored = this.o.maintenance.beginRestore();
    try {
      job.progress(0.02, 'verifying');
      if (checksum) await this.verifyChecksum(file);
      const { message, collections, points, blobs } = await this.archives.install(file, job);
      job.done(message);
      this.o.log.warn({ file: path.basename(file), collections, points, blobs, by }, 'time-series store restored from a backup');
      return { success: true, message, job_id: job.id, file_name: path.basename(file), restored: { kind: 'timeseries', collections, points, blobs } };
    } catch (err) {
      job.fail((err as Error).message);
      throw err;
    } finally {
      restored();
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

  private async stepDelay(): Promise<void> {
    const ms = this.o.settings.restoreStepDelayMs;
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
      this.o.notify.notifyAdmins({ severity: 'error', source: 'backup', title: truncate(title, 120), body: truncate(title, 2048) });
    } catch (err) {
      this.o.log.error({ err: String(err) }, 'could not notify the admins of a failed backup');
    }
  }

  private readState(): BackupState {
    try {
      const state = JSON.parse(fs.readFileSync(path.join(this.o.settings.dataDir, STATE_FILE), 'utf8')) as BackupState;
      return { last_backup_ms: state.last_backup_ms ?? null, last_sqlite: state.last_sqlite ?? null, last_timeseries: state.last_timeseries ?? null };
    } catch {
      return { last_backup_ms: null, last_sqlite: null, last_timeseries: null };
    }
  }

  private writeState(): void {
    const file = path.join(this.o.settings.dataDir, STATE_FILE);
    try {
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(this.state), { mode: PRIVATE_FILE_MODE });
      fs.renameSync(`${file}.tmp`, file);
    } catch (err) {
      this.o.log.warn({ err: String(err) }, 'backup state not written');
    }
  }
}

function truncate(text: string, bytes: number): string {
  let out = text;
  while (Buffer.byteLength(out) > bytes) out = out.slice(0, -1);
  return out;
}
