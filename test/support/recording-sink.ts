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
  /** Set to make write() reject (storage busy). */
  refuse: Error | null = null;
  /** Set to refuse some writes as storage refuses values for good (a 400 naming them); null: accept. */
  refuseWhen: ((values: readonly CollectedValue[]) => Error | null) | null = null;
  writes = 0;
  readonly sink: CollectorSink;

  constructor() {
    const log = pino({ level: 'debug' }, { write: (line: string) => void this.logLines.push(line) });
    this.sink = {
      log,
      write: async (values, options) => {
        this.writes++;
        if (this.refuse) throw this.refuse;
        const refusal = this.refuseWhen?.(values);
        if (refusal) throw refusal;
        (options?.backfill ? this.backfill : this.values).push(...values);
      },
      lastStored: async (tags) => {
        const out = new Map<string, number>();
        for (const v of [...this.values, ...this.backfill]) if (tags.includes(v.tag) && v.ts > (out.get(v.tag) ?? -Infinity)) out.set(v.tag, v.ts);
        return out;
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
