// Day-log compaction into parts, black box over real HTTPS (storage engine "parts", README
// "Sealing"): a day's logs past storage.dayLogCompactBlocks are compacted into
// part-YYYYMMDD-NNNNNNNN.hsd by the write that passed the limit, parts are merged in the
// background, and seal_now merges everything into sealed-YYYYMMDD.hsd. Each test drives many
// small /svcapi/write requests (20 tags, 1-2 points each, about a fifth of them rewriting an
// earlier timestamp with a new value) at the smallest limit the settings allow (1024 blocks,
// about 51 requests a part), and checks that compaction really happened (write_buffer_stats
// compactions, part files on disk) before it checks that every acknowledged point answers with
// its last written value: during ingest, after the background merge, after kill -9 and a
// restart (and `historian check`), after a backup and restore, and after seal_now.
//
// Every test writes to one past day (2026-01-10) with storage.sealGraceMs a year, so the
// background pass only merges parts and never seals the day under the test; seal_now (force)
// seals it in the last test.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { prng } from '../support/prng.js';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';
import { runBackup, newestBackups, restore } from './backup-support.js';

const DAY_MS = 86_400_000;
const T0 = Date.UTC(2026, 0, 10);
const DAY_TEXT = '20260110';
const COMPACT_BLOCKS = 1024;
const TAGS = Array.from({ length: 20 }, (_, i) => `TI-${String(i).padStart(2, '0')}`);
/** Blocks one request adds to a day's logs: one per tag. */
const REQUEST_BLOCKS = TAGS.length;
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const CONFIG = { storage: { shards: 1, dayLogCompactBlocks: COMPACT_BLOCKS, sealGraceMs: 365 * DAY_MS, flushIntervalMs: 100 } };
const CLI = path.resolve('dist', 'src', 'cli', 'main.js');
const PART_FILE = /^part-\d{8}-\d{8}\.hsd$/;

type Points = Array<[number, number]>;
type Body = Record<string, Points>;
type Expected = Map<string, Map<number, number>>;

const enc = encodeURIComponent;
const queryUrl = (tags: string[], start: number, end: number) =>
  `/svcapi/fast_query?${tags.map((t) => `tags=${enc(t)}`).join('&')}&start=${start}&end=${end}${Object.entries(SCOPE).map(([k, v]) => `&${k}=${enc(v)}`).join('')}`;

/**
 * Request bodies of 20 tags x 1-2 points on one day; about 20% of the points rewrite a timestamp
 * already acknowledged for the tag, with a new value. `expected` holds what was acknowledged,
 * last write wins.
 */
class Ingest {
  readonly expected: Expected = new Map(TAGS.map((t) => [t, new Map()]));
  /** Points of the request in flight when the service died: either value (or none) may be there. */
  readonly uncertain: Expected = new Map();
  requests = 0;
  rewrites = 0;
  /** Points acknowledged, a rewritten one each time it was written. */
  written = 0;
  private readonly rand: () => number;
  private readonly nextIndex = new Map<string, number>(TAGS.map((t) => [t, 0]));
  private readonly acked = new Map<string, number[]>(TAGS.map((t) => [t, []]));

  constructor(seed: number, private readonly day = T0) {
    this.rand = prng(seed);
  }

  next(): Body {
    const body: Body = {};
    for (const tag of TAGS) {
      const points = new Map<number, number>();
      const n = this.rand() < 0.5 ? 1 : 2;
      for (let k = 0; k < n; k++) {
        const old = this.acked.get(tag)!;
        let ts: number;
        if (old.length > 0 && this.rand() < 0.2) {
          ts = old[Math.floor(this.rand() * old.length)]!;
          this.rewrites++;
        } else {
          const i = this.nextIndex.get(tag)!;
          this.nextIndex.set(tag, i + 1);
          ts = this.day + i * 1000 + TAGS.indexOf(tag);
          assert.ok(ts < this.day + DAY_MS, 'the test stays on one day');
        }
        let value = Math.round(this.rand() * 1e6) / 100 - 5000;
        if (this.expected.get(tag)!.get(ts) === value) value += 1; // a rewrite always changes the value
        points.set(ts, value);
      }
      body[tag] = [...points.entries()].sort((a, b) => a[0] - b[0]);
    }
    return body;
  }

  ack(body: Body): void {
    this.requests++;
    for (const [tag, points] of Object.entries(body)) {
      const byTs = this.expected.get(tag)!;
      for (const [ts, value] of points) {
        this.written++;
        if (!byTs.has(ts)) this.acked.get(tag)!.push(ts);
        byTs.set(ts, value);
      }
    }
  }

  /** The body of a request that got no answer: its points may or may not be stored. */
  unanswered(body: Body): void {
    for (const [tag, points] of Object.entries(body)) {
      const byTs = this.uncertain.get(tag) ?? new Map<number, number>();
      for (const [ts, value] of points) byTs.set(ts, value);
      this.uncertain.set(tag, byTs);
    }
  }

  snapshot(): Expected {
    return new Map([...this.expected].map(([tag, byTs]) => [tag, new Map(byTs)]));
  }

  pointCount(): number {
    let n = 0;
    for (const byTs of this.expected.values()) n += byTs.size;
    return n;
  }
}

async function post(svc: TestService, token: string, body: Body) {
  return svc.post('/svcapi/write', { ...SCOPE, tags: body }, token);
}

/** `count` requests one after the other; every one must be acknowledged. */
async function ingest(svc: TestService, token: string, ing: Ingest, count: number, onEach?: () => Promise<void>): Promise<void> {
  for (let i = 0; i < count; i++) {
    const body = ing.next();
    const res = await post(svc, token, body);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body?.success, true, res.text);
    ing.ack(body);
    if (onEach) await onEach();
  }
}

interface ShardStats {
  logBlocks: number;
  compactions: number;
}

async function shardStats(svc: TestService, token: string): Promise<ShardStats> {
  const res = await svc.get('/svcapi/write_buffer_stats', token);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.shards.length, 1, res.text);
  const shard = res.body.shards[0];
  assert.equal(typeof shard.logBlocks, 'number', `logBlocks in ${res.text}`);
  assert.equal(typeof shard.compactions, 'number', `compactions in ${res.text}`);
  return { logBlocks: shard.logBlocks, compactions: shard.compactions };
}

function walk(dir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return []; // a folder replaced under a running restore
  }
  return entries.flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

function partFiles(dataDir: string): string[] {
  return walk(path.join(dataDir, 'ts')).filter((f) => PART_FILE.test(path.basename(f)));
}

/** Every tag's points on the day, exactly as acknowledged (each timestamp once, sorted, last value). */
async function assertAllThere(svc: TestService, token: string, expected: Expected, when: string): Promise<void> {
  const res = await svc.get(queryUrl(TAGS, T0, T0 + DAY_MS - 1), token);
  assert.equal(res.status, 200, `${when}: ${res.text.slice(0, 300)}`);
  for (const tag of TAGS) {
    const want = [...(expected.get(tag) ?? new Map()).entries()].sort((a, b) => a[0] - b[0]);
    const got = (res.body[tag] ?? []) as Points;
    assert.equal(got.length, want.length, `${when}: ${tag} has ${got.length} points, ${want.length} were acknowledged`);
    assert.deepEqual(got, want, `${when}: ${tag}`);
  }
}

/**
 * After a kill -9: every acknowledged point with its last value, except that a point of the
 * request in flight may have its value from that request (or, if new, be absent); nothing else.
 */
async function assertAcknowledgedThere(svc: TestService, token: string, ing: Ingest, when: string): Promise<void> {
  const res = await svc.get(queryUrl(TAGS, T0, T0 + DAY_MS - 1), token);
  assert.equal(res.status, 200, `${when}: ${res.text.slice(0, 300)}`);
  for (const tag of TAGS) {
    const acked = ing.expected.get(tag)!;
    const maybe = ing.uncertain.get(tag) ?? new Map<number, number>();
    const got = (res.body[tag] ?? []) as Points;
    const gotByTs = new Map(got);
    assert.equal(gotByTs.size, got.length, `${when}: ${tag} answers each timestamp once`);
    for (let i = 1; i < got.length; i++) assert.ok(got[i]![0] > got[i - 1]![0], `${when}: ${tag} sorted`);
    for (const [ts, value] of acked) {
      const have = gotByTs.get(ts);
      if (maybe.has(ts)) assert.ok(have === value || have === maybe.get(ts), `${when}: ${tag}@${ts} is ${have}, acknowledged ${value} (or unanswered ${maybe.get(ts)})`);
      else assert.equal(have, value, `${when}: ${tag}@${ts} acknowledged ${value}`);
    }
    for (const [ts, value] of gotByTs) {
      if (acked.has(ts)) continue;
      assert.equal(maybe.get(ts), value, `${when}: ${tag}@${ts}=${value} was never written`);
    }
  }
}

function historianCheck(dataDir: string, when: string): void {
  const check = spawnSync(process.execPath, [CLI, 'check', '--data-dir', dataDir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(check.status, 0, `historian check ${when}:\n${check.stdout}\n${check.stderr}`);
}

async function newService(dataDir?: string, env?: Record<string, string>): Promise<{ svc: TestService; token: string }> {
  const svc = await startService({ config: CONFIG, ...(dataDir ? { dataDir } : {}), ...(env ? { env } : {}) });
  const token = await svc.adminToken();
  return { svc, token };
}

async function createCollection(svc: TestService, token: string): Promise<void> {
  const res = await svc.post('/svcapi/create_collection', SCOPE, token);
  assert.equal(res.body?.success, true, res.text);
}

describe('day logs compacted into parts', () => {
  test('many small writes: compactions, logBlocks bounded at every poll, part files, last values answered, background merge below 8 parts', { timeout: 300_000 }, async (t) => {
    const { svc, token } = await newService();
    t.after(() => svc.dispose());
    await createCollection(svc, token);
    const ing = new Ingest(1);

    // A poller beside the ingest: logBlocks never passes the limit by more than one request.
    let polling = true;
    const polls: ShardStats[] = [];
    let maxParts = 0;
    const poller = (async () => {
      while (polling) {
        const stats = await shardStats(svc, token);
        polls.push(stats);
        // The logs written to, and at most four frozen sets waiting for the compaction thread.
        assert.ok(stats.logBlocks < 5 * (COMPACT_BLOCKS + REQUEST_BLOCKS), `logBlocks ${stats.logBlocks} at poll ${polls.length}: over 5 x (dayLogCompactBlocks ${COMPACT_BLOCKS} plus one request (${REQUEST_BLOCKS}))`);
        maxParts = Math.max(maxParts, partFiles(svc.dataDir).length);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    try {
      await ingest(svc, token, ing, 640);
    } finally {
      polling = false;
      await poller;
    }
    assert.ok(ing.rewrites > 1000, `rewrites of earlier timestamps: ${ing.rewrites}`);
    // Frozen logs are parts once the compaction thread has answered.
    await waitFor(async () => (await shardStats(svc, token)).logBlocks < COMPACT_BLOCKS, 'logBlocks under dayLogCompactBlocks once the compaction thread is done', { timeoutMs: 60_000, intervalMs: 20 });
    const after = await shardStats(svc, token);
    assert.ok(polls.length >= 10, `the poller saw the ingest: ${polls.length} polls`);
    assert.ok(polls.some((p) => p.logBlocks > 0), 'some poll saw blocks in the day log');
    // 640 requests x 20 blocks = 12800 blocks: at least 12 parts' worth at 1024.
    assert.ok(after.compactions >= 12, `compactions: ${after.compactions}`);
    assert.ok(maxParts > 0, 'part files were seen on disk during the ingest');

    const metrics = await svc.request('GET', '/metrics', { token });
    assert.equal(metrics.status, 200, metrics.text.slice(0, 300));
    const metric = (name: string) => Number(new RegExp(`^${name}\\{shard="0"\\} (\\S+)$`, 'm').exec(metrics.text)?.[1]);
    assert.equal(metric('historian_storage_compactions_total'), after.compactions, 'the compactions metric is the stats count');
    assert.ok(metric('historian_storage_day_log_blocks') < COMPACT_BLOCKS, `day_log_blocks metric ${metric('historian_storage_day_log_blocks')}`);
    // The compaction thread ran, so its own memory is reported (0 would mean a thread that never answered).
    assert.ok(metric('historian_storage_compaction_heap_used_bytes') > 1 << 20, `compaction heap ${metric('historian_storage_compaction_heap_used_bytes')}`);
    assert.ok(metric('historian_storage_compaction_array_buffer_bytes') > 0, `compaction ArrayBuffers ${metric('historian_storage_compaction_array_buffer_bytes')}`);

    await assertAllThere(svc, token, ing.expected, 'after the ingest');
    // 12+ parts were written; eight of one size merge into one in the background.
    await waitFor(() => partFiles(svc.dataDir).length < 8, `the background merge brings the parts below 8 (${partFiles(svc.dataDir).length} now)`, { timeoutMs: 60_000, intervalMs: 50 });
    const parts = partFiles(svc.dataDir);
    assert.ok(parts.length > 0, 'the day is still in parts (not sealed)');
    assert.ok(parts.every((f) => path.basename(f).startsWith(`part-${DAY_TEXT}-`)), parts.join(', '));
    await assertAllThere(svc, token, ing.expected, 'after the background merge');
  });

  test('kill -9 during ingest with compactions: after a restart every acknowledged point has its last value; writing goes on; historian check is clean', { timeout: 300_000 }, async (t) => {
    let { svc, token } = await newService();
    const dataDir = svc.dataDir;
    t.after(() => svc.dispose());
    await createCollection(svc, token);
    const ing = new Ingest(2);

    let died = false;
    const writer = (async () => {
      for (let i = 0; i < 5000 && !died; i++) {
        const body = ing.next();
        let res;
        try {
          res = await post(svc, token, body);
        } catch {
          ing.unanswered(body);
          return;
        }
        if (res.status !== 200 || res.body?.success !== true) {
          ing.unanswered(body);
          assert.fail(`write answered ${res.status}: ${res.text}`);
        }
        ing.ack(body);
      }
    })();
    await waitFor(async () => (await shardStats(svc, token)).compactions >= 5, 'five compactions during the ingest', { timeoutMs: 120_000, intervalMs: 10 });
    const partsBefore = partFiles(dataDir).length;
    assert.ok(partsBefore > 0, 'part files on disk before the kill');
    died = true;
    assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    await writer;
    assert.ok(ing.requests > 5 * 51, `requests acknowledged before the kill: ${ing.requests}`);

    ({ svc, token } = await newService(dataDir));
    await assertAcknowledgedThere(svc, token, ing, 'after kill -9 and a restart');
    assert.ok(partFiles(dataDir).length > 0, 'the parts are still there after the restart');

    // The restarted store compacts into new parts beside the recovered ones and loses nothing.
    // What it holds now is the truth for the points of the request that got no answer.
    const now = await svc.get(queryUrl(TAGS, T0, T0 + DAY_MS - 1), token);
    for (const [tag, byTs] of ing.uncertain) {
      const held = new Map((now.body[tag] ?? []) as Points);
      for (const ts of byTs.keys()) {
        const have = held.get(ts);
        if (have === undefined) ing.expected.get(tag)!.delete(ts);
        else ing.expected.get(tag)!.set(ts, have);
      }
    }
    ing.uncertain.clear();
    await ingest(svc, token, ing, 200);
    assert.ok((await shardStats(svc, token)).compactions >= 3, 'compactions after the restart');
    await assertAllThere(svc, token, ing.expected, 'after more writes following the restart');
    assert.deepEqual(await svc.stop(), { code: 0, signal: null });

    historianCheck(dataDir, 'after kill -9 during compacting ingest and a restart');
  });

  test('kill -9 with a compaction stopped after the thread wrote and fsynced its part, before the shard renames it: a restart answers every acknowledged point; historian check is clean', { timeout: 300_000 }, async (t) => {
    let { svc, token } = await newService(undefined, { HISTORIAN_DEBUG_PAUSE_AT: 'seal-before-rename' });
    const dataDir = svc.dataDir;
    t.after(() => svc.dispose());
    await createCollection(svc, token);
    const ing = new Ingest(3);
    // The request that passes the limit compacts, and the worker stops before renaming the part.
    let stuck: Body | null = null;
    let stuckAnswer: Promise<unknown> | null = null;
    const paused = () => svc.logs().some((l) => l.event === 'debug-pause');
    for (let i = 0; i < 200 && stuck === null; i++) {
      const body = ing.next();
      const answer = post(svc, token, body);
      let res: Awaited<typeof answer> | null = null;
      // Wait for the answer or the pause, whichever comes first.
      while (res === null && !paused()) res = await Promise.race([answer, new Promise<null>((resolve) => setTimeout(() => resolve(null), 20))]);
      if (res === null) {
        stuck = body;
        stuckAnswer = answer.catch(() => null);
        break;
      }
      assert.equal(res.body?.success, true, res.text);
      ing.ack(body);
      if (paused()) stuck = {}; // answered, and the compaction after it paused
    }
    assert.ok(stuck !== null, 'a compaction reached seal-before-rename');
    assert.equal(partFiles(dataDir).length, 0, 'no part under its final name yet');
    const tmpFiles = () => walk(path.join(dataDir, 'ts')).filter((f) => f.endsWith('.tmp'));
    assert.ok(tmpFiles().some((f) => /^part-\d{8}-\d{8}\.hsd\.\d+\.tmp$/.test(path.basename(f))), `the part is written under its temporary name: ${tmpFiles().join(', ')}`);
    assert.ok(walk(path.join(dataDir, 'ts')).some((f) => /^active-\d{8}-\d{8}\.log$/.test(path.basename(f))), 'its frozen log waits beside it');
    assert.deepEqual(await svc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    await stuckAnswer;
    ing.unanswered(stuck);

    ({ svc, token } = await newService(dataDir));
    await assertAcknowledgedThere(svc, token, ing, 'after kill -9 before a part was renamed');
    assert.deepEqual(tmpFiles(), [], 'the restart removed the temporary part');
    assert.deepEqual(await svc.stop(), { code: 0, signal: null });
    historianCheck(dataDir, 'after kill -9 before a part was renamed');
  });

  test('backup while the day has parts, more writes, restore: the answers of the backup instant', { timeout: 300_000 }, async (t) => {
    const { svc, token } = await newService();
    t.after(() => svc.dispose());
    await createCollection(svc, token);
    const ing = new Ingest(4);
    await ingest(svc, token, ing, 300); // 6000 blocks: 5 parts and a log
    const before = await shardStats(svc, token);
    assert.ok(before.compactions >= 5, `compactions before the backup: ${before.compactions}`);
    assert.ok(partFiles(svc.dataDir).length > 0, 'the day has parts at the backup');
    assert.ok(before.logBlocks > 0, 'and blocks in its log');
    const atBackup = ing.snapshot();
    const pointsAtBackup = ing.pointCount();
    const writtenAtBackup = ing.written;

    await runBackup(svc, token, 'timeseries');
    const { timeseries } = await newestBackups(svc, token, ['timeseries']);
    // The file info counts stored points: a rewritten point still in an older part or log beside
    // its new value counts twice, so the count lies between the distinct and the written points.
    assert.ok(timeseries.points! >= pointsAtBackup && timeseries.points! <= writtenAtBackup, `points of the backup ${timeseries.points}: ${pointsAtBackup} distinct, ${writtenAtBackup} written`);

    // After the backup: rewrites of backed-up points and new points, with compactions and merges.
    await ingest(svc, token, ing, 300);
    const later = await shardStats(svc, token);
    assert.ok(later.compactions >= before.compactions + 5, `compactions after the backup: ${later.compactions}`);
    await assertAllThere(svc, token, ing.expected, 'before the restore');
    let changed = 0;
    for (const [tag, byTs] of atBackup) for (const [ts, v] of byTs) if (ing.expected.get(tag)!.get(ts) !== v) changed++;
    assert.ok(changed > 100, `points rewritten after the backup: ${changed}`);
    assert.ok(ing.pointCount() > pointsAtBackup + 1000, 'points added after the backup');

    const res = await restore(svc, token, 'timeseries', timeseries.file_name);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.restored?.points, timeseries.points, res.text);
    await assertAllThere(svc, token, atBackup, 'after the restore');
    assert.ok(partFiles(svc.dataDir).length > 0, 'the restored day is in parts again');

    // The restored store compacts on.
    const restoredIng = new Ingest(44);
    for (const [tag, byTs] of atBackup) for (const [ts, v] of byTs) restoredIng.expected.get(tag)!.set(ts, v);
    await ingest(svc, token, restoredIng, 120);
    assert.ok((await shardStats(svc, token)).compactions > later.compactions, 'compactions after the restore');
    await assertAllThere(svc, token, restoredIng.expected, 'after writes following the restore');
  });

  test('seal_now of a day with parts: only sealed-YYYYMMDD.hsd remains for it, every point answers the same, historian check is clean', { timeout: 300_000 }, async (t) => {
    const { svc, token } = await newService();
    t.after(() => svc.dispose());
    await createCollection(svc, token);
    const ing = new Ingest(5);
    await ingest(svc, token, ing, 300);
    const stats = await shardStats(svc, token);
    assert.ok(stats.compactions >= 5, `compactions before the seal: ${stats.compactions}`);
    assert.ok(stats.logBlocks > 0, 'the day also has a log');
    const dayFiles = () => walk(path.join(svc.dataDir, 'ts')).map((f) => path.basename(f)).filter((f) => f.includes(DAY_TEXT)).sort();
    assert.ok(dayFiles().some((f) => PART_FILE.test(f)), `parts before the seal: ${dayFiles().join(', ')}`);
    assert.ok(dayFiles().includes(`active-${DAY_TEXT}.log`), `an active log before the seal: ${dayFiles().join(', ')}`);
    await assertAllThere(svc, token, ing.expected, 'before the seal');

    const sealed = await svc.post('/svcapi/seal_now', {}, token);
    assert.equal(sealed.status, 200, sealed.text);
    assert.equal(sealed.body.success, true, sealed.text);
    assert.ok(sealed.body.sealedDays >= 1, sealed.text);
    assert.deepEqual(dayFiles(), [`sealed-${DAY_TEXT}.hsd`], 'only the sealed file of the day is left');
    assert.equal((await shardStats(svc, token)).logBlocks, 0, 'no blocks left in logs');
    await assertAllThere(svc, token, ing.expected, 'after seal_now');

    assert.deepEqual(await svc.stop(), { code: 0, signal: null });
    historianCheck(svc.dataDir, 'after seal_now of a day with parts');
    const again = await startService({ dataDir: svc.dataDir, config: CONFIG });
    try {
      await assertAllThere(again, await again.adminToken(), ing.expected, 'after seal_now and a restart');
    } finally {
      await again.stop('SIGKILL');
    }
  });
});
