// The process log (WIRE.md part 2 "Process log"): every long piece of work (a backup, a restore,
// a seal, a retention purge, a connector backfill) registers a job here with its kind, and
// reports progress and its outcome as it goes, so an operator can see what the service is doing
// and what it did. Jobs are rows of `process_jobs` in the metadata store; a running job is also
// kept in memory, so restoring the metadata store (which replaces the table) does not lose it
// (it subscribes to the store's `replaced` event). Finished jobs are deleted after processLog.retentionDays.

import crypto from 'node:crypto';
import type { ServiceClock } from '../clock.js';
import type { Logger } from '../log.js';
import type { MetaEvents } from '../meta/events.js';
import type { JobFilter, JobKind, JobRecord, ProcessJobsTable } from '../meta/tables/process-jobs.js';

export { JOB_KINDS, JOB_STATUSES, type JobFilter, type JobKind, type JobRecord, type JobStatus } from '../meta/tables/process-jobs.js';

/** A running job, as the work that owns it sees it. */
export interface Job {
  readonly id: string;
  /** Fraction done (0..1, clamped) and what is being done now; written at most a few times a second. */
  progress(fraction: number, message?: string): void;
  done(message: string): void;
  fail(error: string): void;
}

/** Progress rows are written at most this often per job (the last one always). */
const PROGRESS_WRITE_MS = 250;

/** Jobs of this process kept in memory (newest), to write back after the metadata store is restored. */
const RECENT_JOBS = 1000;

export class JobLog {
  private readonly running = new Map<string, JobRecord>();
  private readonly recent = new Map<string, JobRecord>();
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly table: ProcessJobsTable,
    private readonly clock: ServiceClock,
    private readonly log: Logger,
    private readonly retentionDays: number,
    events: MetaEvents,
  ) {
    events.replaced.subscribe((tables) => {
      if (tables.has('process_jobs')) this.rewriteAfterRestore();
    });
  }

  /** Jobs left `running` by a process that ended are failed; the purge of old jobs is scheduled. */
  start(): void {
    const orphans = this.table.failOrphans(this.clock.now());
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
    return this.table.list(filter);
  }

  get(id: string): JobRecord | null {
    return this.table.get(id);
  }

  /**
   * After the metadata store was replaced by a restore: this process's jobs are written again
   * (the restored table is older), and jobs the backup caught running, which are not running
   * here, are marked failed.
   */
  private rewriteAfterRestore(): void {
    for (const record of this.recent.values()) this.write(record);
    this.table.failRestoredRunning(this.clock.now(), [...this.running.keys()]);
  }

  private write(record: JobRecord): void {
    try {
      this.table.write(record);
    } catch (err) {
      // The process log must never fail the work it describes (a restore replacing the table, a full disk).
      this.log.warn({ err: String(err), job: record.id }, 'process log: job row not written');
    }
  }

  private purge(): void {
    if (this.retentionDays <= 0) return;
    const cutoff = this.clock.now() - this.retentionDays * 86_400_000;
    const removed = this.table.deleteFinishedBefore(cutoff);
    if (removed > 0) this.log.info({ removed, retentionDays: this.retentionDays }, 'process log purge');
  }
}
