// The free-disk floor holds under write bursts (issue 34 item 10): statfs is read at most once a
// second, so the bytes of the writes accepted in between are reserved against the floor. Writers
// faster than that refresh stop at the floor with 507, never run the volume into ENOSPC, never
// get a 500. On a real 64 MiB tmpfs (the tests run as root), unmounted in `after`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from './harness.js';
import { mountTmpfs, releaseVolume, type Volume } from '../support/tmpfs.js';

const MiB = 1024 * 1024;
const FLOOR = 24 * MiB;
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };

/** A write body of `points` points over `tags` tags, values that do not compress, about 30 bytes a point. */
function body(seed: number, points: number, tags = 20): Buffer {
  const per = Math.ceil(points / tags);
  const out: Record<string, Array<[number, number]>> = {};
  let state = seed * 2654435761 >>> 0 || 1;
  const t0 = Date.UTC(2026, 0, 1) + seed * per * 1000;
  for (let k = 0; k < tags; k++) {
    const series: Array<[number, number]> = [];
    for (let i = 0; i < per; i++) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      series.push([t0 + i * 1000 + (state & 0x3ff), (state >>> 0) / 4096]);
    }
    out[`tag-${k}`] = series;
  }
  return Buffer.from(JSON.stringify({ ...SCOPE, tags: out }));
}

describe('the disk floor under write bursts', () => {
  let volume: Volume;
  let svc: TestService;
  let admin: string;

  before(async () => {
    volume = mountTmpfs(64 * MiB);
    // The writers repeat eight bodies: compaction into parts would keep one copy of each point
    // and the volume would never fill, so the day logs keep every copy here (16 bytes a point).
    const uncompacted = { dayLogCompactBytes: 1024 * MiB, dayLogCompactBlocks: 1 << 24 };
    svc = await startService({ dataDir: volume.dir, config: { storage: { minFreeBytes: FLOOR, autoCreateCollections: true, ...uncompacted } } });
    admin = await svc.adminToken();
  });
  after(() => releaseVolume(svc, volume));

  test('concurrent writers faster than the statfs refresh stop at the floor with 507: free space never goes under it by more than one body, no 500', async (t) => {
    const bodies = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => body(i + 1, 16_000));
    const largest = Math.max(...bodies.map((b) => b.length));
    let lowest = volume.free();
    const sampler = setInterval(() => (lowest = Math.min(lowest, volume.free())), 5);
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    let seq = 0;
    try {
      // Four writers, each until it is refused (or 600 bodies in all, which would overfill the volume many times).
      await Promise.all([0, 1, 2, 3].map(async () => {
        for (;;) {
          const n = seq++;
          if (n >= 600) return;
          const res = await svc.request('POST', '/svcapi/write', { rawBody: bodies[n % bodies.length]!, token: admin, headers: { 'content-type': 'application/json' } });
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          lowest = Math.min(lowest, volume.free());
          if (res.status !== 200) {
            if (res.status !== 507) failures.push(`${res.status} ${res.text}`);
            return;
          }
        }
      }));
    } finally {
      clearInterval(sampler);
    }
    t.diagnostic(`bodies of ${largest} bytes; answers ${JSON.stringify(Object.fromEntries(statuses))}; lowest free ${lowest} bytes, floor ${FLOOR}`);
    assert.deepEqual(failures, [], 'every refusal is a 507');
    assert.ok((statuses.get(507) ?? 0) > 0, 'the writers reached the floor');
    assert.ok(lowest >= FLOOR - largest, `free space went down to ${lowest} bytes: under the floor ${FLOOR} by more than one body (${largest} bytes)`);
  });
});
