// GET /metrics (WIRE.md part 3 "Prometheus compatibility"): the service's metrics for a
// Prometheus scrape, in text format 0.0.4, or OpenMetrics when `Accept` asks for it.
//
// This subsystem only exposes; it measures nothing of the others. Every part reports its own
// families (the HTTP server, the metadata store, the host, each plugin's Mounted.metrics), and
// main.ts gathers them behind the built-in METRIC_SOURCES capability: so no subsystem depends on
// this one, none imports prom-client, and a subsystem left out of the service takes its families
// with it. Needs any valid token or API key (read-only ones too), unless `metrics.public`.

import { METRIC_SOURCES } from '../host/builtins.js';
import { definePlugin, type Route } from '../host/plugin.js';
import { gauge, histogram, Histogram } from '../metric-source.js';
import { Exposition } from './exposition.js';
import { LiveHeap } from './live-heap.js';
import { formatFor } from './negotiate.js';

/** Bounds of the scrape's own duration, in seconds: 0.5 ms to 1 s. */
const SCRAPE_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

export const metricsPlugin = definePlugin({
  name: 'metrics',
  settings: (config) => config.metrics,
  needs: { sources: METRIC_SOURCES },
  create({ settings, needs, log }) {
    const scrapes = new Histogram(SCRAPE_BUCKETS_SECONDS);
    const liveHeap = new LiveHeap();
    const own = [
      histogram('historian_metrics_scrape_duration_seconds', 'Time this service took to gather and render one GET /metrics answer.', () => [{ histogram: scrapes }], SCRAPE_BUCKETS_SECONDS),
      gauge('historian_main_heap_live_bytes', 'The main thread\'s V8 heap in use right after its last full collection: what survives, without the garbage nodejs_heap_size_used_bytes also counts (absent before the first).', () =>
        liveHeap.bytes === null ? [] : [{ value: liveHeap.bytes }],
      ),
    ];
    const exposition = new Exposition(() => [...needs.sources.all(), ...own], log);
    const route: Route = {
      method: 'GET',
      path: '/metrics',
      auth: settings.public ? 'public' : 'jwt',
      tag: 'Monitoring',
      summary: 'Metrics for Prometheus: text format 0.0.4, or OpenMetrics 1.0.0 when Accept asks for it',
      description:
        'The Node process collectors and the service\'s own `historian_…` families (README "Monitoring with Prometheus"). ' +
        'Any valid token or API key, read-only ones included; no credentials at all with the setting metrics.public. ' +
        '`Accept: application/openmetrics-text` (as Prometheus sends it) answers OpenMetrics, ending in `# EOF`.',
      responses: { 200: { description: 'the exposition', contentType: 'text/plain; version=0.0.4; charset=utf-8' } },
      handler: async (req) => {
        const began = performance.now();
        const format = formatFor(req.headers.accept);
        const body = await exposition.render(format);
        scrapes.observe((performance.now() - began) / 1000);
        return { contentType: exposition.contentType(format), body, headers: { 'cache-control': 'no-store' } };
      },
    };
    return {
      routes: [route],
      start: () => {
        exposition.start();
        liveHeap.start();
      },
      stop: () => liveHeap.stop(),
    };
  },
});
