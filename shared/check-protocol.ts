// The messages of the data-dir check (`historian check`): src/cli/check.ts runs the check of the
// time-series files in a worker thread (workers/check-worker.ts), since src/ never imports the
// storage code that reads those formats. Every message between the two is declared here.

/** One thing wrong with one file. */
export interface CheckProblem {
  /** Path relative to the data dir. */
  file: string;
  /** One line naming what is wrong and where, e.g. "block 12 at byte 40960: checksum mismatch". */
  problem: string;
}

/** What the worker is given. */
export interface CheckWorkerInput {
  dataDir: string;
  /** The service holds the data dir: files may grow, be sealed or replaced while they are read. */
  serviceRunning: boolean;
}

/** What the time-series part checked. */
export interface TimeSeriesChecked {
  dayFiles: number;
  sealedFiles: number;
  dictionaries: number;
  bytes: number;
}

export type CheckWorkerMessage =
  /** Sent once, before any file is read: how much there is to read. */
  | { type: 'plan'; files: number; bytes: number }
  /** `done` bytes of the plan read so far; the last of them in `file` (relative to the data dir). */
  | { type: 'progress'; done: number; file: string }
  | { type: 'done'; checked: TimeSeriesChecked; problems: CheckProblem[]; notes: string[] };
