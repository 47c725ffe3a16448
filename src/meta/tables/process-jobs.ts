// The `process_jobs` table: the rows of the process log (jobs/job-log.ts keeps running jobs in
// memory and writes them here as they move).

import type { Db } from '../database.js';

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

export interface JobFilter {
  kind?: JobKind;
  status?: JobStatus;
  fromMs?: number;
  limit: number;
}

export class ProcessJobsTable {
  private readonly upsert;
  private readonly failRunning;
  private readonly failRunningExcept;
  private readonly byId;
  private readonly purge;

  constructor(private readonly db: Db) {
    this.upsert = db.prepare<[JobRecord]>(
      `INSERT INTO process_jobs (id, kind, status, started_ms, finished_ms, progress, message, error)
       VALUES (@id, @kind, @status, @started_ms, @finished_ms, @progress, @message, @error)
       ON CONFLICT(id) DO UPDATE SET status = excluded.status, finished_ms = excluded.finished_ms,
         progress = excluded.progress, message = excluded.message, error = excluded.error`,
    );
    this.failRunning = db.prepare<[number]>("UPDATE process_jobs SET status = 'failed', finished_ms = ?, error = 'the service stopped before this job finished' WHERE status = 'running'");
    this.failRunningExcept = db.prepare<[number, string]>(
      "UPDATE process_jobs SET status = 'failed', finished_ms = ?, error = 'restored from a backup taken while this job ran' WHERE status = 'running' AND id NOT IN (SELECT value FROM json_each(?))",
    );
    this.byId = db.prepare<[string], JobRecord>('SELECT * FROM process_jobs WHERE id = ?');
    this.purge = db.prepare<[number]>("DELETE FROM process_jobs WHERE status <> 'running' AND finished_ms < ?");
  }

  write(record: JobRecord): void {
    this.upsert.run(record);
  }

  /** Marks every job still `running` failed (a previous run of the service ended under them); how many. */
  failOrphans(now: number): number {
    return this.failRunning.run(now).changes;
  }

  /** After a restore: jobs the backup caught running that are not running here are failed. */
  failRestoredRunning(now: number, runningHere: readonly string[]): void {
    this.failRunningExcept.run(now, JSON.stringify(runningHere));
  }

  /** Deletes finished jobs that finished before `cutoff`; how many. */
  deleteFinishedBefore(cutoff: number): number {
    return this.purge.run(cutoff).changes;
  }

  get(id: string): JobRecord | null {
    return this.byId.get(id) ?? null;
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
}
