// What the process log offers the others: a job for every long piece of work, with its progress
// and outcome (WIRE.md part 2 "Process log").

import { capability } from '../host/plugin.js';
import type { Job, JobKind } from './job-log.js';

export type { Job, JobKind };

export interface ProcessLog {
  /** Registers a job (or, given the id of one a restart interrupted, takes it up again). */
  begin(kind: JobKind, message: string, id?: string): Job;
}

export const PROCESS_LOG = capability<ProcessLog>('jobs.process-log');
