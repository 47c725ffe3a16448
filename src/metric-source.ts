// What a part of the service reports for GET /metrics (WIRE.md part 3), without knowing how it
// is exposed: a list of metric families, each read only when a scrape asks (`read`), from the
// plain counters and state the part keeps anyway. Nothing here imports prom-client; src/metrics/
// turns these into its families. Hot paths therefore pay a number increment on an object they
// already hold (or a `Histogram.observe`), never a label lookup: labels are made at scrape time.
//
// Kept in the kernel so that every layer can report: the HTTP server (requests by route), the
// metadata store (its file and checkpoints), the host and the subsystems (Mounted.metrics).

/**
 * One sample of a counter or gauge family. A source that gives the same `labels` object scrape
 * after scrape has its label text made once (the exposition keeps it per object).
 */
export interface Sample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Bucket bounds for durations, in seconds: 1 ms to 10 s. */
export const DURATION_BUCKETS_SECONDS: readonly number[] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Counts of observed values per bucket, kept where they happen. `observe` is a short scan of
 * the bounds and three additions: nothing allocated, no label touched.
 */
export class Histogram {
  /** Observations per bucket (not cumulative); the last slot counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[] = DURATION_BUCKETS_SECONDS) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** One labelled histogram of a histogram family. */
export interface HistogramSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly histogram: Histogram;
}

type Readout<T> = T | Promise<T>;

interface Family {
  /** The full name, `historian_…` (counters end in `_total`). */
  readonly name: string;
  /** One line for an operator: what is counted, and in which unit. */
  readonly help: string;
}

export interface ScalarFamily extends Family {
  readonly kind: 'counter' | 'gauge';
  /**
   * The family's samples now: a bare number for a family without labels. A promise only where
   * the numbers live in another thread; its reader bounds the wait and answers with the last
   * known ones, so a scrape is never held up for long.
   */
  read(): Readout<number | readonly Sample[]>;
}

export interface HistogramFamily extends Family {
  readonly kind: 'histogram';
  /** Bucket bounds shared by every sample (each sample's histogram has these bounds). */
  readonly bounds: readonly number[];
  read(): Readout<readonly HistogramSample[]>;
}

export type MetricSource = ScalarFamily | HistogramFamily;

/** A counter family (its name ends in `_total`). */
export function counter(name: string, help: string, read: ScalarFamily['read']): ScalarFamily {
  return { kind: 'counter', name, help, read };
}

export function gauge(name: string, help: string, read: ScalarFamily['read']): ScalarFamily {
  return { kind: 'gauge', name, help, read };
}

export function histogram(name: string, help: string, read: HistogramFamily['read'], bounds: readonly number[] = DURATION_BUCKETS_SECONDS): HistogramFamily {
  return { kind: 'histogram', name, help, bounds, read };
}

/** Epoch milliseconds as the seconds a `…_timestamp_seconds` gauge shows (0 for never). */
export function epochSeconds(ms: number | null | undefined): number {
  return ms === null || ms === undefined ? 0 : ms / 1000;
}
