// The exposition of GET /metrics, made with prom-client: one pair of registries per service
// instance (never prom-client's global one: tests run several services in one process), with
// the Node process collectors and every family the service's parts report (src/metric-source.ts).
//
// Two registries, because a prom-client registry has one format, and rendering OpenMetrics
// renames a counter in place (`x_total` becomes `x`, its samples `x_total`): the text registry
// holds the metrics themselves, the OpenMetrics one a view of each that carries its own name.
// Families are read only when a scrape asks; one that fails to read shows no samples (and is
// logged), so one broken part never costs the whole scrape. A sample's labels go to prom-client
// as its "shared labels", whose text it keeps per labels object: a source that hands out the same
// labels object scrape after scrape (the HTTP routes do) has their text made once.

import { collectDefaultMetrics, Registry, type Metric, type OpenMetricsContentType } from 'prom-client';
import type { Logger } from '../log.js';
import type { MetricSource } from '../metric-source.js';

export type ExpositionFormat = 'text' | 'openmetrics';

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

type Labels = Readonly<Record<string, string | number>>;

interface Value {
  /** Labels of this sample alone (a bucket's `le`). */
  labels: Labels;
  /** Labels the sample shares with others; prom-client formats them once per object. */
  sharedLabels: Labels;
  value: number;
  metricName?: string;
}

const NO_LABELS: Labels = Object.freeze({});
/** The `le` labels of every bucket bound, made once for all histograms. */
const bucketLabels = new Map<number, Labels>();
const INFINITE_BUCKET: Labels = Object.freeze({ le: '+Inf' });
const leOf = (bound: number): Labels => {
  let labels = bucketLabels.get(bound);
  if (!labels) bucketLabels.set(bound, (labels = Object.freeze({ le: bound })));
  return labels;
};

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
  /** A histogram's sample names. */
  private readonly suffixed: { bucket: string; sum: string; count: string };

  constructor(
    private readonly source: MetricSource,
    private readonly log: Logger,
  ) {
    this.name = source.name;
    this.help = source.help;
    this.type = source.kind;
    this.suffixed = { bucket: `${source.name}_bucket`, sum: `${source.name}_sum`, count: `${source.name}_count` };
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
      if (typeof read === 'number') return [{ labels: NO_LABELS, sharedLabels: NO_LABELS, value: read }];
      return read.map((s) => ({ labels: NO_LABELS, sharedLabels: s.labels ?? NO_LABELS, value: s.value }));
    }
    const values: Value[] = [];
    const { bucket, sum, count } = this.suffixed;
    for (const { labels = NO_LABELS, histogram } of await source.read()) {
      // Prometheus buckets are cumulative: each counts every observation up to its bound.
      let cumulative = 0;
      for (let i = 0; i < source.bounds.length; i++) {
        cumulative += histogram.counts[i]!;
        values.push({ labels: leOf(source.bounds[i]!), sharedLabels: labels, value: cumulative, metricName: bucket });
      }
      values.push({ labels: INFINITE_BUCKET, sharedLabels: labels, value: histogram.count, metricName: bucket });
      values.push({ labels: NO_LABELS, sharedLabels: labels, value: histogram.sum, metricName: sum });
      values.push({ labels: NO_LABELS, sharedLabels: labels, value: histogram.count, metricName: count });
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
