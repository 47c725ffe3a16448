// The exposition of GET /metrics, made with prom-client: one pair of registries per service
// instance (never prom-client's global one: tests run several services in one process), with
// the Node process collectors and every family the service's parts report (src/metric-source.ts).
//
// Two registries, because a prom-client registry has one format, and rendering OpenMetrics
// renames a counter in place (`x_total` becomes `x`, its samples `x_total`): the text registry
// holds the metrics themselves, the OpenMetrics one a view of each that carries its own name.
// Families are read only when a scrape asks; one that fails to read shows no samples (and is
// logged), so one broken part never costs the whole scrape.

import { collectDefaultMetrics, Registry, type Metric, type OpenMetricsContentType } from 'prom-client';
import type { Logger } from '../log.js';
import type { MetricSource } from '../metric-source.js';

export type ExpositionFormat = 'text' | 'openmetrics';

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

/** What prom-client's registry needs of a metric (its own metric classes have this shape). */
interface RegisteredMetric {
  name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: MetricType; aggregator: 'sum'; values: Value[] }>;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
/** A family whose read keeps failing is logged at most this often. */
const FAILURE_LOG_INTERVAL_MS = 60_000;

/** A reported family as prom-client sees it: its samples read from the source when asked. */
class SourceFamily implements RegisteredMetric {
  name: string;
  readonly help: string;
  readonly type: MetricType;
  readonly aggregator = 'sum' as const;
  private failureLoggedAt = -Infinity;

  constructor(
    private readonly source: MetricSource,
    private readonly log: Logger,
  ) {
    this.name = source.name;
    this.help = source.help;
    this.type = source.kind;
  }

  async get() {
    let values: Value[];
    try {
      values = await this.values();
    } catch (err) {
      values = [];
      if (performance.now() - this.failureLoggedAt > FAILURE_LOG_INTERVAL_MS) {
        this.failureLoggedAt = performance.now();
        this.log.warn({ family: this.source.name, err: String((err as Error)?.message ?? err) }, 'a metrics family could not be read; it shows no samples');
      }
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  private async values(): Promise<Value[]> {
    const source = this.source;
    if (source.kind !== 'histogram') {
      const read = await source.read();
      if (typeof read === 'number') return [{ labels: {}, value: read }];
      return read.map((s) => ({ labels: { ...s.labels }, value: s.value }));
    }
    const values: Value[] = [];
    const bucket = `${source.name}_bucket`;
    for (const { labels = {}, histogram } of await source.read()) {
      // Prometheus buckets are cumulative: each counts every observation up to its bound.
      let cumulative = 0;
      source.bounds.forEach((bound, i) => {
        cumulative += histogram.counts[i]!;
        values.push({ labels: { ...labels, le: bound }, value: cumulative, metricName: bucket });
      });
      values.push({ labels: { ...labels, le: '+Inf' }, value: histogram.count, metricName: bucket });
      values.push({ labels: { ...labels }, value: histogram.sum, metricName: `${source.name}_sum` });
      values.push({ labels: { ...labels }, value: histogram.count, metricName: `${source.name}_count` });
    }
    return values;
  }
}

/**
 * The same metric for the OpenMetrics registry, under a name of its own: rendering OpenMetrics
 * strips `_total` from this view's name, not from the metric the text registry shows.
 */
function openMetricsView(metric: RegisteredMetric): RegisteredMetric {
  const view: RegisteredMetric = {
    name: metric.name,
    help: metric.help,
    type: metric.type,
    aggregator: metric.aggregator,
    get: async () => ({ ...(await metric.get()), name: view.name }),
  };
  return view;
}

export class Exposition {
  private readonly text = new Registry();
  private readonly openMetrics = new Registry<OpenMetricsContentType>();
  /** Names registered, and names refused (logged once). */
  private readonly registered = new Set<string>();
  private readonly refused = new Set<string>();
  private collecting = false;

  constructor(
    /** Every family of the service as it is now; new ones are registered at the next scrape. */
    private readonly sources: () => readonly MetricSource[],
    private readonly log: Logger,
  ) {
    this.openMetrics.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  }

  /** Starts the Node process collectors (CPU, memory, heap, event loop lag, GC, handles), once: prom-client refuses a second set. */
  start(): void {
    if (this.collecting) return;
    this.collecting = true;
    collectDefaultMetrics({ register: this.text });
    for (const metric of this.text.getMetricsAsArray() as unknown as RegisteredMetric[]) {
      this.registered.add(metric.name);
      this.openMetrics.registerMetric(openMetricsView(metric) as unknown as Metric);
    }
  }

  contentType(format: ExpositionFormat): string {
    return format === 'openmetrics' ? this.openMetrics.contentType : this.text.contentType;
  }

  async render(format: ExpositionFormat): Promise<string> {
    this.registerNew();
    return format === 'openmetrics' ? this.openMetrics.metrics() : this.text.metrics();
  }

  /** Registers the families not registered yet (the HTTP server's come after the plugins start). */
  private registerNew(): void {
    const seen = new Set<string>();
    for (const source of this.sources()) {
      const twice = seen.has(source.name);
      seen.add(source.name);
      if (twice && !this.refused.has(source.name)) {
        this.refused.add(source.name);
        this.log.error({ family: source.name }, 'two parts of the service report a metrics family of the same name; the first is shown');
      }
      if (this.registered.has(source.name) || this.refused.has(source.name)) continue;
      const problem = problemOf(source);
      if (problem) {
        this.refused.add(source.name);
        this.log.error({ family: source.name }, `a metrics family is left out: ${problem}`);
        continue;
      }
      const family = new SourceFamily(source, this.log);
      this.registered.add(source.name);
      this.text.registerMetric(family as unknown as Metric);
      this.openMetrics.registerMetric(openMetricsView(family) as unknown as Metric);
    }
  }
}

/** Why a family cannot be exposed as declared, or null (names are checked once, not per scrape). */
function problemOf(source: MetricSource): string | null {
  if (!METRIC_NAME.test(source.name)) return 'its name is not a Prometheus metric name';
  if (source.kind === 'counter' && !source.name.endsWith('_total')) return 'a counter\'s name must end in _total';
  if (source.kind !== 'counter' && source.name.endsWith('_total')) return 'only counters end in _total';
  if (!source.help) return 'it has no help text';
  return null;
}
