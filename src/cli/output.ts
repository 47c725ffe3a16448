// What a command prints: `--json` for scripts (one JSON document on stdout), else a table or lines
// for a person; progress bars on stderr only when a person watches (stdout and stderr terminals),
// so a pipe or a log file gets none of them.

/** Prints `value` as JSON (`--json`), else as the person-readable `text`. */
export function print(json: boolean | undefined, value: unknown, text: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
}

/** Rows as an aligned table with a header; empty → `none`. */
export function table(rows: ReadonlyArray<Record<string, unknown>>, columns: readonly string[]): string {
  if (rows.length === 0) return '(none)';
  const cells = rows.map((row) => columns.map((c) => cell(row[c])));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** A time in ms as ISO 8601 UTC, or `-`. */
export function when(ms: unknown): string {
  return typeof ms === 'number' && Number.isFinite(ms) ? new Date(ms).toISOString() : '-';
}

export interface Progress {
  /** `done` of `total` (units of `unit`); total undefined when unknown (stdin). */
  update(done: number, total?: number, note?: string): void;
  finish(): void;
}

const BAR_WIDTH = 30;

/** A progress bar on stderr, redrawn at most 10 times a second; silent unless a person watches. */
export function progress(label: string, unit: 'bytes' | 'items' = 'bytes'): Progress {
  const watched = process.stdout.isTTY === true && process.stderr.isTTY === true;
  let last = 0;
  let drawn = false;
  const draw = (done: number, total: number | undefined, note: string) => {
    const amount = unit === 'bytes' ? bytes(done) : String(done);
    const of = total === undefined ? '' : ` / ${unit === 'bytes' ? bytes(total) : total}`;
    let bar = '';
    if (total !== undefined && total > 0) {
      const share = Math.min(1, done / total);
      const filled = Math.round(share * BAR_WIDTH);
      bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${(share * 100).toFixed(0).padStart(3)}% `;
    }
    process.stderr.write(`\r${label} ${bar}${amount}${of}${note ? ` ${note}` : ''}\x1b[K`);
    drawn = true;
  };
  return {
    update(done, total, note = '') {
      if (!watched) return;
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      draw(done, total, note);
    },
    finish() {
      if (watched && drawn) process.stderr.write('\n');
    },
  };
}

/** Bytes in binary units, one decimal. */
export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${value} B` : `${value.toFixed(1)} ${units[i]}`;
}
