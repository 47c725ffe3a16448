// `log.format: pretty` (WIRE.md part 3 "Operations"): a pino JSON line (the main thread's, or a
// storage worker's, which writes the same shape) as one line a person reads in a terminal:
//   2026-11-26T17:20:01.123Z INFO  listening port=3030 url=https://localhost:3030
// time (UTC), level name, message, then the other fields as key=value. The line has been
// redacted before it gets here; this only changes its shape.

export type LogFormat = 'json' | 'pretty';

const LEVEL_NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
/** Fields every line has, or that say nothing to a reader. */
const LEFT_OUT = new Set(['time', 'level', 'msg', 'service', 'pid', 'hostname']);

function fieldText(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  if (value === null || typeof value !== 'object') return String(value);
  return JSON.stringify(value);
}

/** `line` (one JSON object and its newline) as a readable line; anything that is not such a line is kept as it is. */
export function prettyLogLine(line: string): string {
  const end = line.endsWith('\n') ? '\n' : '';
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return line;
  const time = typeof entry.time === 'number' && Number.isFinite(entry.time) ? new Date(entry.time).toISOString() : '-';
  const level = (typeof entry.level === 'number' ? LEVEL_NAMES[entry.level] : undefined) ?? String(entry.level ?? '-').toUpperCase();
  const fields = Object.entries(entry).filter(([key]) => !LEFT_OUT.has(key)).map(([key, value]) => `${key}=${fieldText(value)}`);
  const message = typeof entry.msg === 'string' ? entry.msg : '';
  return `${time} ${level.padEnd(5)} ${message}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}${end}`;
}
