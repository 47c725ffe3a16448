// The soak run's figures (growth after warm-up, latency trends, unexpected answers) and its
// markdown report. The test asserts on the same figures the report prints.

import { commandLine, int, machine, markdownTable, mib, ms, num, percentiles } from './runner.js';
import type { Sample, SoakResult } from './soak-driver.js';

const median = (values: number[]): number => {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[(v.length - 1) >> 1];
};

/**
 * Growth of a sampled figure after warm-up: the median of the samples in the minute after
 * `warmupMinutes` against the median of the last minute's (medians, so one GC's sawtooth does
 * not decide it). As a fraction: 0.1 is 10% more.
 */
export function growthAfterWarmup(samples: Sample[], pick: (s: Sample) => number, warmupMinutes: number): { base: number; end: number; growth: number } {
  const lastMinute = samples.at(-1)?.minute ?? 0;
  const warm = Math.min(warmupMinutes, Math.max(0, lastMinute - 1));
  const base = median(samples.filter((s) => s.minute >= warm && s.minute < warm + 1).map(pick));
  const end = median(samples.filter((s) => s.minute >= lastMinute - 1).map(pick));
  return { base, end, growth: end / base - 1 };
}

/**
 * The least-squares line through every sample after warm-up: its value at the end of warm-up and
 * at the last sample, and the growth between them. Samples swing with each isolate's GC (RSS by
 * ±80 MiB in a soak), so two one-minute medians can differ by that swing alone; the line uses
 * all of them.
 */
export function trendAfterWarmup(samples: Sample[], pick: (s: Sample) => number, warmupMinutes: number): { from: number; to: number; growth: number } {
  const lastMinute = samples.at(-1)?.minute ?? 0;
  const warm = Math.min(warmupMinutes, Math.max(0, lastMinute - 1));
  const points = samples.filter((s) => s.minute >= warm && Number.isFinite(pick(s))).map((s) => [s.minute, pick(s)] as const);
  if (points.length < 2) return { from: NaN, to: NaN, growth: NaN };
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  const slope = sxx === 0 ? 0 : points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
  const from = my + slope * (warm - mx);
  const to = my + slope * (lastMinute - mx);
  return { from, to, growth: to / from - 1 };
}

/** Least-squares slope of `values[i]` over minute i, minutes before `fromMinute` and NaNs left out. */
export function slopePerMinute(values: number[], fromMinute: number): number {
  const points = values.map((v, i) => [i, v] as const).filter(([i, v]) => i >= fromMinute && Number.isFinite(v));
  if (points.length < 2) return NaN;
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? NaN : points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / sxx;
}

/** p50 and p99 of each minute of a class. */
export function perMinute(latencies: number[][]): Array<{ p50: number; p99: number; n: number }> {
  return latencies.map((l) => ({ ...percentiles(l), n: l.length }));
}

/**
 * Answers no contract allows: 5xx other than 503 (backpressure, a restarting shard), requests
 * that got no answer in REQUEST_TIMEOUT_MS, connections cut with no killed worker near.
 */
export function unexpectedAnswers(r: SoakResult): string[] {
  const out: string[] = [];
  for (const [cls, f] of r.rec.classes) {
    for (const [status, count] of f.statuses) {
      const code = Number(status);
      if ((Number.isInteger(code) && code >= 500 && code !== 503) || status === 'timeout' || status === 'network') out.push(`${cls}: ${status} ×${count} (${f.samples.join(' | ')})`);
    }
  }
  return out;
}

/** 4xx answers: every request the run sends is well formed and allowed, so each one is a finding. */
export function clientErrors(r: SoakResult): string[] {
  const out: string[] = [];
  for (const [cls, f] of r.rec.classes) {
    for (const [status, count] of f.statuses) if (/^4\d\d$/.test(status)) out.push(`${cls}: ${status} ×${count} (${f.samples.join(' | ')})`);
  }
  return out;
}

/** Route classes that never succeeded during the run. */
export function classesWithoutSuccess(r: SoakResult): string[] {
  return [...r.rec.classes].filter(([, f]) => f.ok === 0).map(([cls]) => cls);
}

/** File descriptors: the most open up to the end of warm-up, the most after it, and at the end. */
export function fdFigures(r: SoakResult): { atWarmup: number; max: number; end: number } {
  const warm = Math.min(r.options.warmupMinutes, (r.samples.at(-1)?.minute ?? 0) - 1);
  const most = (list: Sample[]) => Math.max(...list.map((s) => s.fds).filter(Number.isFinite));
  return { atWarmup: most(r.samples.filter((s) => s.minute <= warm)), max: most(r.samples.filter((s) => s.minute > warm)), end: r.samples.at(-1)?.fds ?? NaN };
}

const pct = (f: number) => (Number.isFinite(f) ? `${f >= 0 ? '+' : ''}${(f * 100).toFixed(1)}%` : 'n/a');
const slope = (v: number) => (Number.isFinite(v) ? `${v >= 0 ? '+' : ''}${v.toFixed(2)} ms/min` : 'n/a');

export function formatReport(r: SoakResult): string {
  const o = r.options;
  const out: string[] = ['# Soak: mixed load on one service', '', `\`${commandLine()}\``, '', `${machine()}`, ''];
  out.push(
    `${num(o.minutes, 1)} minutes (setup ${num(r.setupSeconds, 0)} s before), warm-up ${o.warmupMinutes} min; per write path ${o.tags} tags × ${o.rows} rows a request; ` +
      `${r.sse.open} SSE streams, ${r.ws.opened} WebSockets, ${int(r.monitor.rules)} alarm rules over ${r.monitor.collections} collections (tick ${o.tickMs} ms), ` +
      `${o.queryConnections} query loops, a backup every ${o.backupEveryMinutes} min, a storage worker killed every ${o.crashEveryMinutes} min (${r.crashes} killed, ${r.shards} shards), ` +
      `a slow reader every 20 s and a vanishing reader every 3 s, a login every 10 s, entity CRUD every 2 s.`,
    '',
  );

  const unexpected = unexpectedAnswers(r);
  const missing = r.paths.reduce((n, p) => n + p.missing, 0);
  const rss = growthAfterWarmup(r.samples, (s) => s.rssKb * 1024, o.warmupMinutes);
  const heap = growthAfterWarmup(r.samples, (s) => s.heapUsedBytes, o.warmupMinutes);
  const liveHeap = growthAfterWarmup(r.samples, (s) => s.liveHeapBytes, o.warmupMinutes);
  const liveHeapTrend = trendAfterWarmup(r.samples, (s) => s.liveHeapBytes, o.warmupMinutes);
  const workerHeap = growthAfterWarmup(r.samples, (s) => s.workerHeapBytes, o.warmupMinutes);
  const workerBuffers = growthAfterWarmup(r.samples, (s) => s.workerArrayBufferBytes, o.warmupMinutes);
  const rssTrend = trendAfterWarmup(r.samples, (s) => s.rssKb * 1024, o.warmupMinutes);
  const untracked = growthAfterWarmup(r.samples, untrackedBytes, o.warmupMinutes);
  const untrackedTrend = trendAfterWarmup(r.samples, untrackedBytes, o.warmupMinutes);
  const files = growthAfterWarmup(r.samples, (s) => s.dataFiles, o.warmupMinutes);
  const fds = fdFigures(r);
  out.push('## Verdict', '');
  out.push(
    markdownTable(
      ['check', 'result'],
      [
        ['5xx other than 503, hangs, cut connections', unexpected.length === 0 ? 'none' : `${unexpected.length} kinds (see Answers by class)`],
        ['4xx (every request sent is valid)', clientErrors(r).join('; ') || 'none'],
        ['every acknowledged point present (4 write paths + live markers)', missing === 0 ? 'yes' : `NO: ${int(missing)} missing`],
        ['RSS after warm-up (goal < +10%)', `${mib(rss.base)} → ${mib(rss.end)} (${pct(rss.growth)})`],
        ['RSS after warm-up, least-squares line over every sample (one GC\'s swing moves it less than two minutes\' medians)', `${mib(rssTrend.from)} → ${mib(rssTrend.to)} (${pct(rssTrend.growth)})`],
        ['V8 heap used after warm-up (garbage not collected yet included)', `${mib(heap.base)} → ${mib(heap.end)} (${pct(heap.growth)})`],
        ['V8 heap after full collections (what survives; goal < +10%), after warm-up: medians; line', `${mib(liveHeap.base)} → ${mib(liveHeap.end)} (${pct(liveHeap.growth)}); ${mib(liveHeapTrend.from)} → ${mib(liveHeapTrend.to)} (${pct(liveHeapTrend.growth)})`],
        [
          'RSS less every heap and buffer sampled (native memory: TLS, uWS, SQLite, malloc), after warm-up: medians; line',
          `${mib(untracked.base)} → ${mib(untracked.end)} (${pct(untracked.growth)}); ${mib(untrackedTrend.from)} → ${mib(untrackedTrend.to)} (${pct(untrackedTrend.growth)})`,
        ],
        ['storage workers\' heap and ArrayBuffers after warm-up', `${mib(workerHeap.base)} → ${mib(workerHeap.end)} (${pct(workerHeap.growth)}); ${mib(workerBuffers.base)} → ${mib(workerBuffers.end)} (${pct(workerBuffers.growth)})`],
        ['day logs\' block index (36 B per block; storage.dayLogCompactBlocks bounds it)', `at most ${int(Math.max(...r.samples.map((s) => s.logBlocks)))} blocks (${mib(36 * Math.max(...r.samples.map((s) => s.logBlocks)))})`],
        ['file descriptors (most until the end of warm-up → most after it, at the end)', `${fds.atWarmup} → ${fds.max}, end ${fds.end}`],
        ['data-dir files after warm-up', `${int(files.base)} → ${int(files.end)} (${pct(files.growth)})`],
        ['route classes without a success', classesWithoutSuccess(r).join(', ') || 'none'],
      ],
    ),
    '',
  );

  out.push('## Write paths and acknowledged points', '');
  out.push(
    markdownTable(
      ['path', 'flat out, points/s', 'run at, points/s', 'requests', 'abandoned', 'acknowledged', 'stored', 'missing'],
      r.paths.map((p) => [p.path, int(p.measuredMax), int(p.rate), int(p.requests), int(p.abandoned), int(p.acknowledged), int(p.stored), int(p.missing)]),
    ),
    '',
    'Stored above acknowledged comes from requests whose answer was lost or refused and then retried with the same points (one point per timestamp).',
    '',
  );

  out.push('## Memory, descriptors and files over time', '');
  const byMinute: Sample[] = [];
  for (const s of r.samples) if (byMinute.length === 0 || Math.floor(s.minute) > Math.floor(byMinute.at(-1)!.minute) || s === r.samples.at(-1)) byMinute.push(s);
  out.push(
    markdownTable(
      ['minute', 'RSS (of it anonymous)', 'main thread: V8 heap used, allocated; external', 'storage workers: heap, ArrayBuffers', 'compaction threads: heap, ArrayBuffers', 'RSS less these', 'fds', 'data-dir files', 'data-dir bytes', 'day-log blocks'],
      byMinute.map((s) => [
        num(s.minute, 1),
        `${mib(s.rssKb * 1024)} (${mib(s.rssAnonKb * 1024)})`,
        `${mib(s.heapUsedBytes)}, ${mib(s.heapTotalBytes)}; ${mib(s.externalBytes)}`,
        `${mib(s.workerHeapBytes)}, ${mib(s.workerArrayBufferBytes)}`,
        `${mib(s.compactionHeapBytes)}, ${mib(s.compactionArrayBufferBytes)}`,
        mib(untrackedBytes(s)),
        String(s.fds),
        int(s.dataFiles),
        mib(s.dataBytes),
        int(s.logBlocks),
      ]),
    ),
    '',
  );

  out.push('## Latency per route class (successful requests)', '');
  out.push(`Slopes are least-squares fits over the minutes after warm-up; no upward trend means a slope near 0.`, '');
  const rows: string[][] = [];
  for (const [cls, f] of [...r.rec.classes].sort(([a], [b]) => a.localeCompare(b))) {
    const all = percentiles(f.perMinute.flat());
    const minutes = perMinute(f.perMinute);
    rows.push([cls, int(f.ok), ms(all.p50), ms(all.p99), slope(slopePerMinute(minutes.map((m) => m.p50), o.warmupMinutes)), slope(slopePerMinute(minutes.map((m) => m.p99), o.warmupMinutes)), minutes.map((m) => (m.n ? Math.round(m.p99) : '-')).join(' ')]);
  }
  out.push(markdownTable(['route class', 'ok', 'p50', 'p99', 'p50 slope', 'p99 slope', 'p99 by minute (ms)'], rows), '');
  out.push('p50 by minute (ms):', '');
  out.push(markdownTable(['route class', 'p50 by minute'], [...r.rec.classes].sort(([a], [b]) => a.localeCompare(b)).map(([cls, f]) => [cls, perMinute(f.perMinute).map((m) => (m.n ? num(m.p50, 1) : '-')).join(' ')])), '');

  out.push('## Answers by class', '');
  out.push(
    markdownTable(
      ['route class', 'answers', 'first failures'],
      [...r.rec.classes].sort(([a], [b]) => a.localeCompare(b)).map(([cls, f]) => [cls, [...f.statuses].map(([s, n]) => `${s}×${int(n)}`).join(', '), f.samples.join(' · ').replace(/\|/g, '/').slice(0, 300)]),
    ),
    '',
  );
  const u = r.rec.unavailable;
  out.push(
    `503 answers: ${int(u.nearCrash)} within 60 s after a killed storage worker, ${int(u.elsewhere)} elsewhere (write backpressure), ${int(u.withRetryAfter)} of them with Retry-After. ` +
      'Documented (SPEC, Status codes): 503 for a full write buffer; the crash route\'s description: requests in flight on the restarted shard get 503. Writes answered 503 were retried with the same body.',
    '',
  );
  if (unexpected.length > 0) out.push('Unexpected answers:', '', ...unexpected.map((line) => `- ${line}`), '');

  const h = percentiles(r.health.latencies);
  out.push('## The rest', '');
  out.push(
    markdownTable(
      ['what', 'figure'],
      [
        ['`/ingest/health` every 250 ms (worker thread)', `${int(r.health.latencies.length)} answers, p50 ${ms(h.p50)}, p99 ${ms(h.p99)}, max ${ms(h.max)}; ${r.health.failures.length} failures ${r.health.failures.slice(0, 3).join(' / ')}`],
        ['notification streams', `${r.sse.open} open, ${r.sse.ended} ended by the server; ${r.sse.posted} posted, ${int(r.sse.delivered)} of ${int(r.sse.expected)} deliveries`],
        ['live WebSockets', `${r.ws.opened} subscribed (${r.ws.failed.length} failed ${r.ws.failed.slice(0, 2).join(' / ')}); ${int(r.ws.delivered)} of ${int(r.ws.opened * r.ws.markers)} (socket, acknowledged marker) pairs delivered${r.ws.missed.length ? ` (${r.ws.missed.join('; ')})` : ''}; ${r.ws.closed} closed by the server ${r.ws.errors.slice(0, 2).join(' / ')}`],
        ['storage workers killed', r.crashMinutes.map((m) => `minute ${m.toFixed(2)}`).join(', ') || 'none'],
        ['freed memory handed back (`malloc_trim`)', freedMemory(r.samples)],
        ['monitor', `${int(r.monitor.rules)} rules; tick_number ${r.monitor.ticksFirst} → ${r.monitor.ticksLast}`],
        ['backups', `${r.backups.done} done, ${r.backups.failed.length} failed ${r.backups.failed.slice(0, 3).join(' / ')}`],
      ],
    ),
  );
  return out.join('\n');
}

/**
 * RSS less what the service's own figures account for: the main thread's allocated heap and its
 * external memory, the storage workers' and compaction threads' heaps and ArrayBuffers. What is
 * left is native memory (TLS and uWS buffers, SQLite, glibc's arenas, code) that no V8 figure counts.
 */
function untrackedBytes(s: Sample): number {
  return s.rssKb * 1024 - s.heapTotalBytes - s.externalBytes - s.workerHeapBytes - s.workerArrayBufferBytes - s.compactionHeapBytes - s.compactionArrayBufferBytes;
}

/** Trims of freed native memory over the run and what they gave back, from the last sample of the counters. */
function freedMemory(samples: readonly Sample[]): string {
  const last = samples.at(-1);
  if (!last || !Number.isFinite(last.freedMemoryTrims)) return 'not reported';
  const trims = Math.max(1, last.freedMemoryTrims);
  return `${int(last.freedMemoryTrims)} trims, ${mib(last.freedMemoryReturnedBytes)} given back in all (${mib(last.freedMemoryReturnedBytes / trims)} and ${ms((last.freedMemoryTrimSeconds * 1000) / trims)} a trim)`;
}
