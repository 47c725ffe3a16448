// The storage worker's logger: pino-compatible JSON lines (numeric level, time, the main
// logger's `service`, the shard) on stdout, at the level of the `log.level` setting, which the
// main thread passes in the worker data; with `log.format` pretty, the readable lines the main
// thread writes (shared/log-format.ts). pino itself is not loaded in a worker for the few
// lines a worker writes. As in pino, a disabled level is a no-op, so a line below the setting
// costs nothing (not even its JSON).

import { prettyLogLine, type LogFormat } from '../shared/log-format.js';

export type LogFn = (obj: object, msg: string) => void;

export interface WorkerLog {
  debug: LogFn;
  info: LogFn;
  warn: LogFn;
  error: LogFn;
  fatal: LogFn;
}

/** pino's level numbers; `silent` is above all of them. */
const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;

const noop: LogFn = () => {};

export const silentLog: WorkerLog = { debug: noop, info: noop, warn: noop, error: noop, fatal: noop };

/**
 * A logger writing lines at `level` and above (an unknown level counts as `info`), each with
 * `bindings` (the shard) before the caller's fields.
 */
export function workerLog(level: string, bindings: Record<string, unknown>, write: (line: string) => void = (line) => void process.stdout.write(line), format: LogFormat = 'json'): WorkerLog {
  const threshold = (LEVELS as Record<string, number>)[level] ?? LEVELS.info;
  const at = (value: number): LogFn =>
    value < threshold ? noop : (obj, msg) => {
      const line = `${JSON.stringify({ level: value, time: Date.now(), service: 'historian', ...bindings, ...obj, msg })}\n`;
      write(format === 'pretty' ? prettyLogLine(line) : line);
    };
  return { debug: at(LEVELS.debug), info: at(LEVELS.info), warn: at(LEVELS.warn), error: at(LEVELS.error), fatal: at(LEVELS.fatal) };
}
