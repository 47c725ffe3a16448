// The process log (WIRE.md part 2 "Process log"): every long piece of work (a backup, a restore,
// a seal, a retention purge, a connector backfill) registers a job here with its kind, and
// reports progress and its outcome as it goes, so an operator can see what the service is doing
// and what it did. Jobs are rows of `process_jobs` in the metadata store; a running job is also
// kept in memory, so restoring the metadata store (which replaces the table) does not lose it
// (rewriteRunning). Finished jobs are deleted after processLog.retentionDays.

import crypto from 'node:crypto';
import type { ServiceClock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Db } from '../meta/database.js';

export const JOB_KINDS = ['backup', 'restore', 'seal', 'purge', 'backfill'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATUSES = ['running', 'done', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobRecord {
  id: string;
  kind: JobKind;
  status: JobStatus;
  started_ms: number;
  finished_ms: number | null;
  progress: number;
  message: string;
  error: string | null;
}

/** A running job, as the work that owns it sees it. */
export interface Job {
  readonly id: string;
  /** Fraction done (0..1, clamped) and what is being done now; written at most a few times a second. */
  progress(fraction: number, message?: string): void;
  done(message: string): void;
  fail(error: string): void;
}

export interface JobFilter {
  kind?: JobKind;
  status?: JobStatus;
  fromMs?: number;
  limit: number;
}

/** Progress rows are written at most this often per job (the last one always). */
const PROGRESS_WRITE_MS = 250;

/** Jobs of this process kept in memory (newest), to write back after the metadata store is restored. */
const RECENT_JOBS = 1000;

export class JobLog {
  private readonly running = new Map<string, JobRecord>();
  private readonly recent = new Map<string, JobRecord>();
  private readonly upsert;
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Db,
    private readonly clock: ServiceClock,
    private readonly log: Logger,
    private readonly retentionDays: number,
  ) {
    this.upsert = db.prepare(
      `INSERT INTO process_jobs (id, kind, status, started_ms, finished_ms, progress, message, error)
       VALUES (@id, @kind, @status, @started_ms, @finished_ms, @progress, @message, @error)
       ON CONFLICT(id) DO UPDATE SET status = excluded.status, finished_ms = excluded.finished_ms,
         progress = excluded.progress, message = excluded.message, error = excluded.error`,
    );
  }

  /** Jobs left `running` by a process that ended are failed; the purge of old jobs is scheduled. */
  start(): void {
    const orphans = this.db
      .prepare("UPDATE process_jobs SET status = 'failed', finished_ms = ?, error = 'the service stopped before this job finished' WHERE status = 'running'")
      .run(this.clock.now()).changes;
    if (orphans > 0) this.log.warn({ jobs: orphans }, 'process log: jobs of a previous run marked failed');
    this.purge();
    this.purgeTimer = setInterval(() => this.purge(), 3_600_000);
    this.purgeTimer.unref();
  }

  stop(): void {
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    this.purgeTimer = null;
  }

  /** Registers a job (or, given the id of one a restart interrupted, takes it up again) and returns its handle. */
  begin(kind: JobKind, message: string, id: string = crypto.randomUUID()): Job {
    const record: JobRecord = { id, kind, status: 'running', started_ms: this.clock.now(), finished_ms: null, progress: 0, message, error: null };
    this.running.set(record.id, record);
    this.recent.set(record.id, record);
    if (this.recent.size > RECENT_JOBS) this.recent.delete(this.recent.keys().next().value!);
    this.write(record);
    this.log.info({ job: record.id, kind }, `${kind} started: ${message}`);
    let lastWrite = 0;
    const finish = (status: 'done' | 'failed', text: string) => {
      if (record.status !== 'running') return;
      record.status = status;
      record.finished_ms = this.clock.now();
      if (status === 'done') {
        record.progress = 1;
        record.message = text;
      } else record.error = text;
      this.running.delete(record.id);
      this.write(record);
      const fields = { job: record.id, kind, ms: record.finished_ms - record.started_ms };
      if (status === 'done') this.log.info(fields, `${kind} done: ${text}`);
      else this.log.error({ ...fields, error: text }, `${kind} failed`);
    };
    return {
      id: record.id,
      progress: (fraction, text) => {
        if (record.status !== 'running') return;
        record.progress = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
        if (text !== undefined) record.message = text;
        const now = Date.now();
        if (now - lastWrite >= PROGRESS_WRITE_MS || text !== undefined) {
          lastWrite = now;
          this.write(record);
        }
      },
      done: (text) => finish('done', text),
      fail: (error) => finish('failed', error),
    };
  }

  list(filter: JobFilter): { jobs: JobRecord[]; total_count: number } {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.kind) {
      where.push('kind = ?');
      params.push(filter.kind);
    }
    if (filter.status) {
      where.push('status = ?');
      params.push(filter.status);
    }
    if (filter.fromMs !== undefined) {
      where.push('started_ms >= ?');
      params.push(filter.fromMs);
    }
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const total = this.db.prepare(`SELECT count(*) FROM process_jobs ${clause}`).pluck().get(...params) as number;
    const jobs = this.db.prepare(`SELECT * FROM process_jobs ${clause} ORDER BY started_ms DESC, rowid DESC LIMIT ?`).all(...params, filter.limit) as JobRecord[];
    return { jobs, total_count: total };
  }

  get(id: string): JobRecord | null {
    return (this.db.prepare('SELECT * FROM process_jobs WHERE id = ?').get(id) as JobRecord | undefined) ?? null;
  }

  /**
   * After the metadata store was replaced by a restore: this process's jobs are written again
   * (the restored table is older), and jobs the backup caught running, which are not running
   * here, are marked failed.
   */
  rewriteAfterRestore(): void {
    for (const record of this.recent.values()) this.write(record);
    const ids = JSON.stringify([...this.running.keys()]);
    this.db
      .prepare("UPDATE process_jobs SET status = 'failed', finished_ms = ?, error = 'restored from a backup taken while this job ran' WHERE status = 'running' AND id NOT IN (SELECT value FROM json_each(?))")
      .run(this.clock.now(), ids);
  }

  private write(record: JobRecord): void {
    try {
      this.upsert.run(record);
    } catch (err) {
      // The process log must never fail the work it describes (a restore replacing the table, a full disk).
      this.log.warn({ err: String(err), job: record.id }, 'process log: job row not written');
    }
  }

  private purge(): void {
    if (this.retentionDays <= 0) return;
    const cutoff = this.clock.now() - this.retentionDays * 86_400_000;
    const removed = this.db.prepare("DELETE FROM process_jobs WHERE status <> 'running' AND finished_ms < ?").run(cutoff).changes;
    if (removed > 0) this.log.info({ removed, retentionDays: this.retentionDays }, 'process log purge');
  }
}
