/**
 * The main thread's share of a monitor tick, alone (issue 33): the real TickScheduler over
 * `--collections` × `--tags` rules (100 × 100), with a sampler that answers at once with values
 * inside every limit but a few (`--alarming` rules flap) and tables that keep nothing in memory
 * (no SQLite), so what is measured is the evaluation itself. It runs `--ticks` ticks after as many
 * unmeasured ones (the JIT) and reports the CPU time per tick (process.cpuUsage, this script has
 * one thread doing work), which other processes on the cores change far less than wall time.
 *
 *   node dist/bench/monitor-tick.js [--collections 100] [--tags 100] [--ticks 300] [--alarming 4]
 */

import { parseArgs } from 'node:util';
import { TickScheduler, type SchedulerOptions } from '../src/monitor/scheduler.js';
import { MONITOR_SAMPLE_STRIDE, type MonitorSample, type MonitorSampleRequest } from '../shared/protocol.js';
import { percentiles } from './runner.js';

const { values } = parseArgs({ options: { collections: { type: 'string' }, tags: { type: 'string' }, ticks: { type: 'string' }, alarming: { type: 'string' } }, strict: true });
const collections = Number(values.collections ?? 100);
const tags = Number(values.tags ?? 100);
const ticks = Number(values.ticks ?? 300);
const alarming = Number(values.alarming ?? 4);

const ids = Array.from({ length: collections }, (_, c) => `acme/site-${c}/unit-${c}/main`);
// Rows as SQLite gives them (alarm-rules.ts ruleOfRow): limits 1000 away except the first tag of `alarming` collections.
const rows = new Map(
  ids.map((id, c) => [
    id,
    Array.from({ length: tags }, (_, t) => ({
      id: `r-${c}-${t}`, collection_id: id, tag: `TI-${String(t).padStart(4, '0')}`, tag_index: t, name: `rule ${t}`, enabled: 1,
      limHi: t === 0 && c < alarming ? 51 : 1000, limLo: -1000, deadband: t % 3 ? 0.5 : 0, on_delay_ms: t % 4 === 1 ? 2000 : 0, off_delay_ms: t % 5 === 2 ? 1000 : 0,
      stale_after_ms: null, severity: 'warning', notify: 1, tagmetaId: null, origin: 'api', phase: 'normal', kind: null, since_ms: null, event_id: null,
    })),
  ]),
);
let stateWrites = 0;
const tables = {
  enabled: () => true,
  enabledCollections: () => ids,
  rateOf: () => 1000,
  enabledRules: (id: string) => rows.get(id)!,
  transaction: (work: () => void) => work(),
  saveRuleState: () => void stateWrites++,
  saveTagIndex: () => void stateWrites++,
  insertEvent: () => void stateWrites++,
  resolve: () => void stateWrites++,
} as unknown as SchedulerOptions['tables'];

let now = 1_800_000_000_000;
let tickNumber = 0;
const sampler = {
  async sample(requests: MonitorSampleRequest[]): Promise<MonitorSample[]> {
    tickNumber++;
    return requests.map((r) => {
      const values = new Float64Array(tags * MONITOR_SAMPLE_STRIDE);
      for (let t = 0; t < tags; t++) {
        const v = 50 + ((t + tickNumber) % 3);
        values.set([now - 10, v, now - 20, v + 0.5, now - 30, v - 0.5, 100], t * MONITOR_SAMPLE_STRIDE);
      }
      return { collectionId: r.collectionId, values, ...(r.tags ? { tagIndexes: r.tags.map((_, i) => i) } : {}) };
    });
  },
  tagIndexes: async () => [],
};
const quiet = () => {};
const log = { debug: quiet, info: quiet, warn: quiet, error: quiet } as unknown as SchedulerOptions['log'];
const scheduler = new TickScheduler({ tables, sampler, leadership: { leads: () => true } as SchedulerOptions['leadership'], clock: { now: () => now } as SchedulerOptions['clock'], log, defaultTickRateMs: 1000, notify: quiet });
scheduler.start();
// The ticks are driven here, not by its timer.
const inside = scheduler as unknown as { runTick(): Promise<void>; timer: NodeJS.Timeout | null };
const stopTimer = () => inside.timer && clearTimeout(inside.timer);
stopTimer();

const cpuMs: number[] = [];
const wallMs: number[] = [];
for (let i = 0; i < 2 * ticks; i++) {
  now += 1000;
  const cpu = process.cpuUsage();
  const wall = performance.now();
  await inside.runTick();
  const used = process.cpuUsage(cpu);
  if (i >= ticks) {
    wallMs.push(performance.now() - wall);
    cpuMs.push((used.user + used.system) / 1000);
  }
}
stopTimer();
const cpu = percentiles(cpuMs);
const wall = percentiles(wallMs);
console.log(`${collections * tags} rules (${collections} collections × ${tags} tags), ${ticks} ticks measured: CPU per tick p50 ${cpu.p50.toFixed(3)} ms, p99 ${cpu.p99.toFixed(3)} ms; wall p50 ${wall.p50.toFixed(3)} ms, p99 ${wall.p99.toFixed(3)} ms; ${(stateWrites / (2 * ticks)).toFixed(1)} state writes per tick`);
