/**
 * Prometheus remote write decoding speed: what a storage worker does with one body, step by
 * step (snappy, protobuf, mapping to per-collection batches). (protobufjs, the obvious peer, is
 * only a transitive dependency here, which tests alone may import.)
 *
 * Body: 10,000 series × 10 samples (100,000 samples), the shape of a node_exporter-like scrape:
 * `__name__`, `instance`, `job` and one or two more labels per series, samples 15 s apart,
 * values that are counters, gauges with decimals, 0/1 states and a few stale markers.
 *
 *   npx tsc -b && node dist/bench/prom-remote-write.js [seconds per row, default 2]
 */
import { decodeWriteRequest, encodeWriteRequest, type EncodableSeries, type Label } from '../native-free-codecs/prom-remote.js';
import { snappyCompress, snappyDecompress } from '../native-free-codecs/snappy.js';
import { promPointsByCollection } from '../native-free-codecs/write-body-prom.js';
import { prng } from '../test/support/prng.js';

const SERIES = 10_000;
const SAMPLES = 10;
const SECONDS = Number(process.argv[2] ?? 2);
const T0 = 1_750_000_000_000;
const SCOPE = { organization: 'acme', site: 'north', unit: 'b1', grid: 'default' };

function buildSeries(): EncodableSeries[] {
  const random = prng(42);
  const metrics = ['node_cpu_seconds_total', 'node_memory_MemFree_bytes', 'node_network_receive_bytes_total', 'node_filesystem_avail_bytes', 'up'];
  return Array.from({ length: SERIES }, (_, s) => {
    const labels: Label[] = [['__name__', metrics[s % metrics.length]], ['instance', `host-${s % 500}:9100`], ['job', 'node']];
    if (s % 3 === 0) labels.push(['mode', ['idle', 'user', 'system'][s % 3]]);
    labels.push(['series', String(s)]);
    labels.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const values = new Float64Array(SAMPLES);
    let v = Math.floor(random() * 1e6);
    for (let i = 0; i < SAMPLES; i++) {
      v += s % 5 === 4 ? 0 : s % 2 === 0 ? Math.floor(random() * 100) : Math.round((random() - 0.5) * 1000) / 100;
      values[i] = s % 5 === 4 ? 1 : v;
    }
    if (s % 100 === 0) new BigUint64Array(values.buffer)[SAMPLES - 1] = 0x7ff0000000000002n; // a stale marker now and then
    return { labels, timestamps: Array.from({ length: SAMPLES }, (_, i) => T0 + i * 15_000), values };
  });
}

/** Runs `run` for SECONDS; prints the median and the best run (the machine may be shared: the best is the steadier figure). */
function time(name: string, bytes: number, run: () => unknown): void {
  for (let i = 0; i < 3; i++) run(); // warm up
  const runs: number[] = [];
  const started = performance.now();
  while (performance.now() - started < SECONDS * 1000 || runs.length < 5) {
    const t = performance.now();
    run();
    runs.push(performance.now() - t);
  }
  runs.sort((a, b) => a - b);
  const median = runs[runs.length >> 1];
  const best = runs[0];
  const rate = (ms: number) => ((SERIES * SAMPLES) / (ms / 1000) / 1e6).toFixed(2).padStart(6);
  console.log(`${name.padEnd(48)} median ${median.toFixed(2).padStart(7)} ms ${rate(median)} M samples/s | best ${best.toFixed(2).padStart(7)} ms ${rate(best)} M samples/s ${((bytes / 1048576) / (best / 1000)).toFixed(0).padStart(5)} MiB/s`);
}

const protobufBytes = encodeWriteRequest(buildSeries());
const snappyBytes = snappyCompress(protobufBytes);
console.log(`${SERIES} series × ${SAMPLES} samples: protobuf ${protobufBytes.length} bytes, snappy ${snappyBytes.length} bytes`);
time('snappy decompress', protobufBytes.length, () => snappyDecompress(snappyBytes, 64 << 20));
time('decodeWriteRequest', protobufBytes.length, () => decodeWriteRequest(protobufBytes, { minTimestampMs: 1e11 }));
time('decodeWriteRequest + promPointsByCollection', protobufBytes.length, () => promPointsByCollection(decodeWriteRequest(protobufBytes), SCOPE));
time('whole: snappy + decode + mapping (the worker)', protobufBytes.length, () => promPointsByCollection(decodeWriteRequest(snappyDecompress(snappyBytes, 64 << 20), { minTimestampMs: 1e11 }), SCOPE));
time('snappy compress (remote read answers)', protobufBytes.length, () => snappyCompress(protobufBytes));
time('encodeWriteRequest', protobufBytes.length, () => encodeWriteRequest(buildSeries()));
