// `historian import` and `historian export` (import.ts, export.ts do the work): points between
// files and one collection, with a progress bar, Ctrl-C leaving a resumable import behind.

import fs from 'node:fs';
import { Option, type Command } from 'commander';
import { withTarget } from './accounts.js';
import { CommandError } from './command-error.js';
import { probeDataDir } from '../data-dir.js';
import { checkDataDir, type CheckReport } from './check.js';
import { exportData } from './export.js';
import { importData } from './import.js';
import { bytes, print, progress } from './output.js';
import { commandConfig, type GlobalOptions } from './target.js';

/** An AbortSignal that Ctrl-C (SIGINT) or SIGTERM fires, so work stops at a clean point. */
function interruptible(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const stop = () => controller.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return {
    signal: controller.signal,
    dispose() {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    },
  };
}

/** The library's errors (a bad line, a refused write) become the command's one line. */
function asCommandError(err: unknown, interrupted: boolean, what: string): never {
  if (err instanceof CommandError) throw err;
  if (interrupted) throw new CommandError(`${what} interrupted`);
  throw new CommandError((err as Error).message ?? String(err));
}

export function dataCommands(program: Command, global: () => GlobalOptions): void {
  program.command('import').argument('<file>', 'a CSV or line protocol file (gzip allowed), or - for standard input')
    .description('write the points of a file into a collection; a rerun after an interruption resumes without doubling anything')
    .requiredOption('--collection <id>', 'organization/site/unit/grid')
    .addOption(new Option('--format <format>', 'the file\'s format (auto: by extension, else by the first line)').choices(['auto', 'csv', 'lp']).default('auto'))
    .addOption(new Option('--precision <unit>', 'unit of line protocol timestamps').choices(['ns', 'us', 'ms', 's']).default('ns'))
    .option('--create', 'create the collection when it does not exist')
    .option('--state-dir <dir>', 'where the resume state goes (default: beside the file, <file>.import-state)')
    .option('--fast', 'write with /svcapi/write_fast (answered once handed to the OS, not fsynced)')
    .action(async (file: string, opts: { collection: string; format: 'auto' | 'csv' | 'lp'; precision: 'ns' | 'us' | 'ms' | 's'; create?: boolean; stateDir?: string; fast?: boolean }) => {
      if (file !== '-' && !fs.existsSync(file)) throw new CommandError(`no file ${file}`);
      const minTimestampMs = global().url ? undefined : commandConfig(global()).storage.minTimestampMs;
      await withTarget(global(), 'import', async (target) => {
        const bar = progress(`import ${file === '-' ? 'stdin' : file}`);
        const stop = interruptible();
        try {
          const result = await importData(target, {
            collection: opts.collection, input: file, format: opts.format, precision: opts.precision,
            createCollection: opts.create === true, stateDir: opts.stateDir, durability: opts.fast ? 'fast' : 'sync',
            ...(minTimestampMs !== undefined ? { minTimestampMs } : {}),
            onProgress: (done, total, points) => bar.update(done, total, `${points} points`),
            onNotice: (message) => process.stderr.write(`historian: ${message}\n`),
            signal: stop.signal,
          });
          bar.finish();
          print(global().json, result, () => `imported ${result.points} points (${result.lines} lines, ${bytes(result.bytes)}) into ${opts.collection}${result.resumedFromByte > 0 ? `, resumed at byte ${result.resumedFromByte}` : ''}`);
        } catch (err) {
          bar.finish();
          asCommandError(err, stop.signal.aborted, 'import (run the same command again to resume)');
        } finally {
          stop.dispose();
        }
      });
    });

  program.command('export')
    .description('write the raw points of a collection\'s tags as CSV or line protocol (streamed)')
    .requiredOption('--collection <id>', 'organization/site/unit/grid')
    .option('--tags <names...>', 'tag names or globs (* ? \\); default every tag')
    .option('--from <time>', 'epoch ms, RFC 3339 or now-1h; default the first point')
    .option('--to <time>', 'epoch ms, RFC 3339 or now; default the last point')
    .addOption(new Option('--format <format>', 'what to write').choices(['csv', 'lp']).default('csv'))
    .addOption(new Option('--time-format <form>', 'CSV times as epoch ms or ISO 8601').choices(['ms', 'iso']).default('ms'))
    .option('-o, --output <file>', 'write here instead of standard output')
    .action(async (opts: { collection: string; tags?: string[]; from?: string; to?: string; format: 'csv' | 'lp'; timeFormat: 'ms' | 'iso'; output?: string }) => {
      await withTarget(global(), 'export', async (target) => {
        const out = opts.output ? fs.createWriteStream(opts.output, { mode: 0o600 }) : process.stdout;
        const bar = progress('export', 'items');
        const stop = interruptible();
        try {
          const result = await exportData(target, {
            collection: opts.collection, tags: opts.tags, from: opts.from, to: opts.to, format: opts.format, timeFormat: opts.timeFormat, out,
            onProgress: (points, series) => bar.update(points, undefined, `points, ${series} series`),
            signal: stop.signal,
          });
          bar.finish();
          if (opts.output) await new Promise<void>((resolve, reject) => (out as fs.WriteStream).end((err?: Error | null) => (err ? reject(err) : resolve())));
          // The data went to stdout (unless -o): the summary goes to stderr.
          const summary = `exported ${result.points} points of ${result.series} series${result.skipped ? ` (${result.skipped} not finite, skipped)` : ''}${result.unmatched.length ? `; nothing matched ${result.unmatched.join(', ')}` : ''}`;
          if (global().json && opts.output) print(true, result, () => summary);
          else process.stderr.write(`${global().json ? JSON.stringify(result) : summary}\n`);
        } catch (err) {
          bar.finish();
          asCommandError(err, stop.signal.aborted, 'export');
        } finally {
          stop.dispose();
        }
      });
    });
}

export function checkCommand(program: Command, global: () => GlobalOptions): void {
  program.command('check')
    .description('verify every day file, sealed file, tag dictionary and SQLite file of the data dir; changes nothing; exit 1 when something is wrong')
    .action(async () => {
      if (global().url) throw new CommandError('check reads the data dir\'s files: run it on the service host, without --url');
      const dataDir = commandConfig(global()).dataDir;
      if (!fs.existsSync(dataDir) || !fs.statSync(dataDir).isDirectory()) throw new CommandError(`no data dir at ${dataDir}`);
      // Only looks: the lock is probed (taken for an instant when free), never held.
      const state = probeDataDir(dataDir);
      const bar = progress('check');
      let report: CheckReport;
      try {
        report = await checkDataDir(dataDir, { serviceRunning: state.held, onProgress: (done, total) => bar.update(done, total) });
      } finally {
        bar.finish();
      }
      print(global().json, report, () => [
        ...report.problems.map((p) => `PROBLEM ${p.file}: ${p.problem}`),
        ...report.notes.map((n) => `note: ${n}`),
        `${report.ok ? 'ok' : `${report.problems.length} problem(s)`}: ${report.checked.dayFiles} day files, ${report.checked.sealedFiles} sealed files, ${report.checked.dictionaries} dictionaries, ${report.checked.sqlite} SQLite files, ${bytes(report.checked.bytes)} read${state.held ? ' (beside the running service)' : ''}`,
      ].join('\n'));
      if (!report.ok) process.exitCode = 1;
    });
}
