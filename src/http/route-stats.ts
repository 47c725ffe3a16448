// Requests and their durations per route pattern and status class, for GET /metrics. Each
// compiled route holds its RouteStats; a finished request adds to it through the exchange that
// already points at it: an index by status class and Histogram.observe, no string built and no
// map looked up per request. Requests no route took (404, 405, refused before routing) go to one
// RouteStats of their own. Labels are made only when a scrape reads these (`httpMetricSources`).

import { counter, histogram, Histogram, type HistogramSample, type MetricSource, type Sample } from '../metric-source.js';

/** `1xx` … `5xx`, by `status / 100`; index 0 is never used. */
const STATUS_CLASSES = ['', '1xx', '2xx', '3xx', '4xx', '5xx'] as const;

/** The route label of requests that matched no route. */
export const UNMATCHED_ROUTE = '(unmatched)';

/** The labels of one route and status class. */
export type RouteLabels = Readonly<{ method: string; route: string; status_class: string }>;

export class RouteStats {
  /** A histogram per status class, made on the first request of that class. */
  private readonly byClass: Array<Histogram | null> = [null, null, null, null, null, null];
  /** Their labels, made by the first scrape that shows them and kept: their text is made once. */
  private readonly labels: Array<RouteLabels | null> = [null, null, null, null, null, null];

  constructor(
    readonly method: string,
    /** The declared path pattern (`/svcapi/collection/{id}`), never a requested path. */
    readonly route: string,
  ) {}

  record(status: number, seconds: number): void {
    const index = status >= 100 && status < 600 ? (status / 100) | 0 : 5;
    (this.byClass[index] ??= new Histogram()).observe(seconds);
  }

  /** Each status class seen so far with its histogram. */
  *classes(): IterableIterator<[labels: RouteLabels, histogram: Histogram]> {
    for (let i = 1; i < STATUS_CLASSES.length; i++) {
      const histogram = this.byClass[i];
      if (histogram) yield [(this.labels[i] ??= Object.freeze({ method: this.method, route: this.route, status_class: STATUS_CLASSES[i]! })), histogram];
    }
  }
}

/** The HTTP families over `all()`, the server's RouteStats (routes never requested show nothing). */
export function httpMetricSources(all: () => readonly RouteStats[]): MetricSource[] {
  const labelled = <T>(make: (labels: RouteLabels, histogram: Histogram) => T): T[] => {
    const out: T[] = [];
    for (const stats of all()) for (const [labels, h] of stats.classes()) out.push(make(labels, h));
    return out;
  };
  return [
    counter(
      'historian_http_requests_total',
      'HTTP requests answered, by method, route pattern and status class (HEAD counts with GET; route "(unmatched)": no route took it).',
      () => labelled((labels, h): Sample => ({ labels, value: h.count })),
    ),
    histogram(
      'historian_http_request_duration_seconds',
      'Time from a request\'s arrival to the end of its answer (a stream\'s whole life), by method, route pattern and status class.',
      () => labelled((labels, h): HistogramSample => ({ labels, histogram: h })),
    ),
  ];
}
