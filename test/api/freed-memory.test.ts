// Freed native memory handed back to the system (storage.trimFreedMemoryMs, glibc's malloc_trim
// through koffi): the trim really returns freed pages on this machine's glibc; the service trims
// at once when a storage worker is replaced, every trimFreedMemoryMs, and never with 0, counted
// in GET /metrics. And the main heap's live size (historian_main_heap_live_bytes): what a full
// collection leaves, without the garbage the heap in use carries between collections.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { createLogger } from '../../src/log.js';
import { LiveHeap } from '../../src/metrics/live-heap.js';
import { FreedMemory } from '../../src/storage/freed-memory.js';
import { waitFor } from '../support/wait-for.js';
import { startService, type TestService } from './harness.js';

const MiB = 1024 * 1024;

/** One sample of an unlabelled family in GET /metrics. */
async function metric(svc: TestService, token: string, name: string): Promise<number> {
  const res = await svc.request('GET', '/metrics', { token });
  assert.equal(res.status, 200, res.text);
  const line = res.text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is in /metrics`);
  return Number(line.slice(name.length + 1));
}

describe('freed memory handed back to the system', () => {
  test('a trim returns the pages of freed buffers that glibc kept', () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const freed = new FreedMemory(3_600_000, createLogger('silent'));
    assert.equal(freed.available, true, 'malloc_trim is reachable on this Linux with glibc');
    // 50 KB buffers come from malloc's arena (under its 128 KiB mmap threshold). One in ten is
    // kept, so the freed ones sit between live ones, where glibc never gives memory back by itself.
    let buffers: Buffer[] | null = Array.from({ length: 6000 }, () => Buffer.alloc(50_000, 1));
    const kept = buffers.filter((_, i) => i % 10 === 0);
    buffers = null;
    gc();
    gc();
    freed.now('test');
    assert.equal(freed.trims, 1);
    assert.ok(freed.returnedBytes > 64 * MiB, `gave back ${Math.round(freed.returnedBytes / MiB)} MiB of about 257 MiB freed`);
    assert.equal(kept.length, 600);
  });

  test('the live heap is what a full collection leaves, garbage left out', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const live = new LiveHeap();
    live.start();
    try {
      assert.equal(live.bytes, null, 'nothing before the first full collection');
      let garbage: number[][] | null = Array.from({ length: 2000 }, () => Array.from({ length: 1000 }, (_, i) => i + 0.5));
      const withGarbage = v8.getHeapStatistics().used_heap_size;
      assert.equal(garbage.length, 2000);
      garbage = null;
      gc();
      await waitFor(() => live.bytes !== null, 'the collection is observed');
      assert.ok(live.bytes! < withGarbage - 8 * MiB, `live ${Math.round(live.bytes! / MiB)} MiB after collecting, ${Math.round(withGarbage / MiB)} MiB in use before`);
    } finally {
      live.stop();
    }
  });

  test('with 0 nothing is trimmed, not even after a worker restart', async (t) => {
    const svc = await startService({ config: { storage: { shards: 1, trimFreedMemoryMs: 0 }, debug: { crashRoute: true } } });
    t.after(() => svc.dispose());
    const admin = await svc.adminToken();
    assert.equal((await svc.post('/svcapi/_debug/crash_shard', { shard: 0 }, admin)).status, 200);
    await waitFor(() => svc.logLines.filter((l) => l.includes('shard recovered')).length >= 2, 'a new worker recovers the shard');
    await waitFor(async () => (await svc.get('/svcapi/health', admin)).status === 200, 'health is ok again');
    assert.equal(await metric(svc, admin, 'historian_freed_memory_trims_total'), 0);
    assert.equal(await metric(svc, admin, 'historian_freed_memory_returned_bytes_total'), 0);
    assert.equal(await metric(svc, admin, 'historian_freed_memory_trim_seconds_total'), 0);
  });

  test('a replaced storage worker is followed by a trim at once; the interval trims on its own', async (t) => {
    const svc = await startService({ config: { storage: { shards: 1, trimFreedMemoryMs: 3_600_000 }, debug: { crashRoute: true } } });
    t.after(() => svc.dispose());
    const admin = await svc.adminToken();
    assert.equal(await metric(svc, admin, 'historian_freed_memory_trims_total'), 0, 'no trim before the first interval ends');
    assert.equal((await svc.post('/svcapi/_debug/crash_shard', { shard: 0 }, admin)).status, 200);
    await waitFor(async () => (await metric(svc, admin, 'historian_freed_memory_trims_total')) === 1, 'one trim once the successor answers');
    assert.ok((await metric(svc, admin, 'historian_freed_memory_returned_bytes_total')) >= 0);
    assert.ok((await metric(svc, admin, 'historian_freed_memory_trim_seconds_total')) > 0, 'the trim took some time');

    const often = await startService({ config: { storage: { shards: 1, trimFreedMemoryMs: 100 } } });
    t.after(() => often.dispose());
    const token = await often.adminToken();
    await waitFor(async () => (await metric(often, token, 'historian_freed_memory_trims_total')) >= 5, 'trims every 100 ms');
  });
});
