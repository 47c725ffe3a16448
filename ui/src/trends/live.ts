// Live tail over /svcapi/ws (WIRE.md part 2 "Live data over WebSocket"): one socket, one
// subscription per collection, JSON points handed to the page as they come. A dropped socket is
// reopened with backoff; a policy close (1008, 4xxx) is final, since retrying cannot fix it.

import type { Api } from '../api.js';
import { scopeOf, type SeriesRef } from './model.js';

export type LiveStatus = 'connecting' | 'live' | 'retrying' | 'stopped';

export interface LiveHandlers {
  /** Points of one collection's tags, `[ts, value]` in time order per tag. */
  points(collection: string, tags: Record<string, Array<[number, number]>>): void;
  /** Every subscription is live (after each connect): the page fills what it may have missed. */
  ready(): void;
  error(message: string): void;
  status(status: LiveStatus): void;
}

interface ServerMessage {
  op?: string;
  id?: string;
  error?: string;
  tags?: Record<string, Array<[number, number]>> | string[];
}

const MAX_BACKOFF_MS = 30_000;

export class LiveTail {
  private ws: WebSocket | null = null;
  private retries = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  /** Subscription id → collection. */
  private readonly subscriptions = new Map<string, { collection: string; tags: string[] }>();
  private waiting = new Set<string>();

  constructor(private readonly api: Api, series: readonly SeriesRef[], private readonly on: LiveHandlers) {
    const byCollection = new Map<string, string[]>();
    for (const s of series) byCollection.set(s.collection, [...(byCollection.get(s.collection) ?? []), s.tag]);
    let n = 0;
    for (const [collection, tags] of byCollection) this.subscriptions.set(`trend-${n++}`, { collection, tags: [...new Set(tags)] });
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    const ws = this.ws;
    this.ws = null;
    if (ws && ws.readyState <= WebSocket.OPEN) ws.close(1000, 'live tail off');
  }

  private connect(): void {
    this.on.status(this.retries === 0 ? 'connecting' : 'retrying');
    const ws = new WebSocket(this.api.socketUrl('/svcapi/ws'));
    this.ws = ws;
    ws.addEventListener('open', () => {
      this.waiting = new Set(this.subscriptions.keys());
      for (const [id, { collection, tags }] of this.subscriptions) {
        ws.send(JSON.stringify({ op: 'subscribe', id, ...scopeOf(collection), tags, format: 'json' }));
      }
    });
    ws.addEventListener('message', (event) => {
      if (typeof event.data !== 'string') return;
      let message: ServerMessage;
      try { message = JSON.parse(event.data) as ServerMessage; } catch { return; }
      this.received(message);
    });
    ws.addEventListener('close', (event) => {
      if (this.ws !== ws || this.stopped) return;
      this.ws = null;
      if (event.code === 1008 || (event.code >= 4000 && event.code < 5000)) {
        this.on.error(`Live data stopped: ${event.reason || `the service closed the connection (${event.code})`}`);
        this.on.status('stopped');
        return;
      }
      // Exponential backoff with jitter, so many consoles do not return in step after a restart.
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.retries) * (0.75 + Math.random() / 2);
      this.retries++;
      this.on.status('retrying');
      this.timer = setTimeout(() => this.connect(), delay);
    });
  }

  private received(message: ServerMessage): void {
    const sub = message.id ? this.subscriptions.get(message.id) : undefined;
    switch (message.op) {
      case 'subscribed':
        if (!message.id || !this.waiting.delete(message.id) || this.waiting.size > 0) return;
        this.retries = 0;
        this.on.status('live');
        this.on.ready();
        return;
      case 'points':
        if (sub && message.tags && !Array.isArray(message.tags)) this.on.points(sub.collection, message.tags);
        return;
      case 'error':
        this.on.error(`Live data${sub ? ` of ${sub.collection}` : ''}: ${message.error ?? 'error'}`);
        // A refused subscription will not confirm; the others still count as live.
        if (message.id && this.waiting.delete(message.id) && this.waiting.size === 0) {
          this.on.status('live');
          this.on.ready();
        }
        return;
      default:
    }
  }
}
