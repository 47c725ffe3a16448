/**
 * Soak (issue 34, "a long week in half an hour"): one service under mixed load for `--minutes`:
 * the four write paths (JSON `/svcapi/write`, HSW1 `/svcapi/write_fast`, line protocol
 * `/ingest/v2/write` and root `/write`) together at half the service's ingest capacity (each
 * path measured alone flat out for `--measure-seconds` first, then run at `--rate-fraction` of
 * its maximum divided by four; or `--rate` points/s each), queries of every format (JSON, binary
 * format 1 and 2, CSV, msgpack, aggregated, InfluxQL `/query`, PromQL `query_range`, lastlist),
 * notification streams, live-data WebSockets, the monitor with `--rules` alarm rules, a backup
 * every `--backup-minutes`, entity CRUD, logins, slow and vanishing readers, and one storage
 * worker killed every `--crash-minutes` (`POST /svcapi/_debug/crash_shard`, mounted by
 * `debug.crashRoute`). Prints RSS, V8 heap, file descriptors and data-dir files over time, p50 and
 * p99 per route class per minute with their slopes, answers by class, and every acknowledged
 * point counted back.
 *
 *   npm run bench:soak -- [--minutes 30] [--rate 0] [--rate-fraction 0.5] [--measure-seconds 10] [--tags 100] [--rows 100]
 *                         [--sse 500] [--ws 200] [--rules 10000] [--tick-ms 1000] [--query-connections 2]
 *                         [--backup-minutes 5] [--crash-minutes 7] [--sample-seconds 10] [--warmup 5] [--keep]
 */

import { parseArgs } from 'node:util';
import { DEFAULT_SOAK_OPTIONS, runSoak, SOAK_SERVICE_SETTINGS, type SoakOptions } from './soak-driver.js';
import { classesWithoutSuccess, clientErrors, formatReport, unexpectedAnswers } from './soak-report.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startOurService } from './service.js';

const { values } = parseArgs({
  options: {
    ...Object.fromEntries(
      ['minutes', 'rate', 'rate-fraction', 'measure-seconds', 'tags', 'rows', 'sse', 'ws', 'rules', 'tick-ms', 'query-connections', 'backup-minutes', 'crash-minutes', 'sample-seconds', 'warmup'].map((k) => [k, { type: 'string' as const }]),
    ),
    keep: { type: 'boolean' },
  },
  strict: true,
});
const number = (name: string, fallback: number, min = 0): number => {
  const raw = (values as Record<string, string | undefined>)[name];
  if (raw === undefined) return fallback;
  const v = Number(raw);
  if (!Number.isFinite(v) || v < min) throw new Error(`--${name} must be a number >= ${min}, got ${raw}`);
  return v;
};
const d = DEFAULT_SOAK_OPTIONS;
const options: Partial<SoakOptions> = {
  minutes: number('minutes', d.minutes, 0.5),
  ratePerPath: number('rate', d.ratePerPath),
  rateFraction: number('rate-fraction', d.rateFraction, 0.01),
  measureSeconds: number('measure-seconds', d.measureSeconds, 1),
  tags: number('tags', d.tags, 1),
  rows: number('rows', d.rows, 1),
  sseStreams: number('sse', d.sseStreams),
  webSockets: number('ws', d.webSockets),
  rules: number('rules', d.rules),
  tickMs: number('tick-ms', d.tickMs, 100),
  queryConnections: number('query-connections', d.queryConnections, 1),
  backupEveryMinutes: number('backup-minutes', d.backupEveryMinutes, 0.5),
  crashEveryMinutes: number('crash-minutes', d.crashEveryMinutes, 0.5),
  sampleSeconds: number('sample-seconds', d.sampleSeconds, 1),
  warmupMinutes: number('warmup', d.warmupMinutes),
};

const service = await startOurService(SOAK_SERVICE_SETTINGS);
try {
  const result = await runSoak({ port: service.port, ca: service.ca, pid: service.process.pid, dataDir: service.dataDir, adminEmail: ADMIN_EMAIL, adminPassword: ADMIN_PASSWORD }, options);
  console.log(formatReport(result));
  const failed = unexpectedAnswers(result).length > 0 || clientErrors(result).length > 0 || result.paths.some((p) => p.missing > 0) || classesWithoutSuccess(result).length > 0;
  process.exitCode = failed ? 1 : 0;
} catch (err) {
  process.stderr.write(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n--- server log (last lines) ---\n${service.process.logTail(30).join('\n')}\n`);
  process.exitCode = 1;
} finally {
  if ((values as { keep?: boolean }).keep) {
    await service.stop();
    process.stderr.write(`data dir kept: ${service.dataDir}\n`);
  } else await service.dispose();
}
