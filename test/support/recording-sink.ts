// A CollectorSink that keeps what a driver hands it (values, back-fill, skips, states, log lines),
// for driver tests that run without the service.

import pino from 'pino';
import type { CollectedValue, CollectorSink, CollectorState } from '../../src/collectors/driver.js';

export interface RecordedState {
  state: CollectorState;
  error: string | undefined;
  at: number;
}

export class RecordingSink {
  readonly values: CollectedValue[] = [];
  readonly backfill: CollectedValue[] = [];
  readonly skipped = new Map<string, number>();
  readonly states: RecordedState[] = [];
  readonly logLines: string[] = [];
  /** Set to make write() reject (storage refusing). */
  refuse: Error | null = null;
  readonly sink: CollectorSink;

  constructor() {
    const log = pino({ level: 'debug' }, { write: (line: string) => void this.logLines.push(line) });
    this.sink = {
      log,
      write: async (values, options) => {
        if (this.refuse) throw this.refuse;
        (options?.backfill ? this.backfill : this.values).push(...values);
      },
      skipped: (count, reason) => void this.skipped.set(reason, (this.skipped.get(reason) ?? 0) + count),
      state: (state, error) => void this.states.push({ state, error, at: Date.now() }),
    };
  }

  get state(): RecordedState | undefined {
    return this.states.at(-1);
  }

  tags(): Set<string> {
    return new Set(this.values.map((v) => v.tag));
  }

  valuesOf(tag: string): CollectedValue[] {
    return this.values.filter((v) => v.tag === tag);
  }
}
