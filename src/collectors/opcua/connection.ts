// One connection's resources (client, session, subscription, timers) and how it ended: every
// step of connecting races the connection's end and a time limit, so a server that stops answering
// mid-step cannot hang the collector.

import type { ClientSession, ClientSubscription, OPCUAClient } from 'node-opcua-client';

const CONNECT_TIMEOUT_MS = 30_000;

/** Why a connection ended: `fatal` needs a person (state failed), anything else is retried as is. */
export class ConnectionEnd extends Error {
  constructor(message: string, readonly fatal: boolean) {
    super(message);
  }
}

/** One connection's resources and the promise that settles when it breaks. */
export class Connection {
  client: OPCUAClient | null = null;
  session: ClientSession | null = null;
  subscription: ClientSubscription | null = null;
  ended: ConnectionEnd | null = null;
  /** It got as far as collecting (every item monitored). */
  up = false;
  readonly endedPromise: Promise<ConnectionEnd>;
  private resolveEnded!: (end: ConnectionEnd) => void;
  readonly timers: NodeJS.Timeout[] = [];

  constructor() {
    this.endedPromise = new Promise((resolve) => (this.resolveEnded = resolve));
  }

  end(message: string, fatal = false): void {
    if (this.ended) return;
    this.ended = new ConnectionEnd(message, fatal);
    this.resolveEnded(this.ended);
  }

  /** `promise`, unless the connection ends first or it takes longer than `timeoutMs`. */
  async guard<T>(promise: Promise<T>, what: string, timeoutMs = CONNECT_TIMEOUT_MS): Promise<T> {
    if (this.ended) throw this.ended;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ConnectionEnd(`${what}: no answer within ${timeoutMs / 1000} s`, false)), timeoutMs);
    });
    try {
      return await Promise.race([promise, timeout, this.endedPromise.then((end) => Promise.reject(end))]);
    } finally {
      clearTimeout(timer);
      promise.catch(() => undefined);
    }
  }
}

export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
