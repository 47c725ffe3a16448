// How the parts of the service plug in. A subsystem declares its routes, how it starts, how it
// stops and how healthy it is; the host starts them in order, stops them in reverse order, and
// keeps a subsystem that failed to start mounted: every one of its routes then answers 501
// naming the subsystem and the cause (SPEC asks this of the monitor; here it is the rule for
// all). In the spirit of fastify's `register` with `onClose`.

import { ServiceError } from '../shared/errors.js';
import type { RouteDef } from './http/route.js';
import type { Logger } from './log.js';

export type HealthStatus = 'ok' | 'degraded' | 'failed';

export interface Health {
  status: HealthStatus;
  /** Why it is not ok, for an operator. */
  reason?: string;
  /** False when this subsystem cannot take writes right now (health then answers 503). */
  acceptsWrites?: boolean;
  /** Optional upstream settings and whether each is set (the proxies). */
  configured?: Record<string, boolean>;
}

export interface Subsystem {
  /** Short name, used in logs, health and 501 messages: `storage`, `monitor`. */
  readonly name: string;
  /** Its routes; mounted whatever happens at start. */
  routes(): RouteDef[];
  /** Throws when it cannot run; the service then goes on without it. */
  start?(): Promise<void> | void;
  /** Called in reverse order of start, only for subsystems that started. */
  stop?(): Promise<void> | void;
  /** Current health while it runs. */
  health?(): Health;
}

type State = { phase: 'pending' } | { phase: 'running' } | { phase: 'failed'; cause: string } | { phase: 'stopped' };

export interface ServiceHealth {
  status: 'ok' | 'degraded';
  acceptsWrites: boolean;
  subsystems: Record<string, Health>;
}

export class SubsystemHost {
  private readonly states = new Map<string, State>();
  private readonly started: Subsystem[] = [];

  constructor(
    private readonly subsystems: readonly Subsystem[],
    private readonly log: Logger,
  ) {
    const names = new Set<string>();
    for (const s of subsystems) {
      if (names.has(s.name)) throw new Error(`two subsystems are named ${s.name}`);
      names.add(s.name);
      this.states.set(s.name, { phase: 'pending' });
    }
  }

  /** Every subsystem's routes, each answering 501 while its subsystem is not running. */
  routes(): RouteDef[] {
    return this.subsystems.flatMap((s) =>
      s.routes().map((def) => ({
        ...def,
        handler: (req) => {
          this.requireRunning(s.name);
          return def.handler(req);
        },
      })) as RouteDef[],
    );
  }

  /** Starts each subsystem in order; one that throws is marked failed, logged, and skipped. */
  async start(): Promise<void> {
    for (const s of this.subsystems) {
      const began = performance.now();
      try {
        await s.start?.();
        this.states.set(s.name, { phase: 'running' });
        this.started.push(s);
        this.log.info({ subsystem: s.name, ms: Math.round(performance.now() - began) }, 'subsystem started');
      } catch (err) {
        const cause = (err as Error)?.message ?? String(err);
        this.states.set(s.name, { phase: 'failed', cause });
        this.log.error({ subsystem: s.name, err: String((err as Error)?.stack ?? err) }, 'subsystem failed to start; its routes answer 501');
      }
    }
  }

  /** Stops what started, in reverse order; a failing stop is logged and the others still stop. */
  async stop(): Promise<void> {
    for (const s of this.started.splice(0).reverse()) {
      try {
        await s.stop?.();
      } catch (err) {
        this.log.error({ subsystem: s.name, err: String((err as Error)?.stack ?? err) }, 'subsystem failed to stop cleanly');
      }
      this.states.set(s.name, { phase: 'stopped' });
    }
  }

  health(): ServiceHealth {
    const subsystems: Record<string, Health> = {};
    let acceptsWrites = true;
    let ok = true;
    for (const s of this.subsystems) {
      const state = this.states.get(s.name)!;
      let health: Health;
      if (state.phase === 'failed') health = { status: 'failed', reason: `failed to start: ${state.cause}`, acceptsWrites: false };
      else if (state.phase !== 'running') health = { status: 'failed', reason: state.phase === 'pending' ? 'not started yet' : 'stopped', acceptsWrites: false };
      else health = s.health?.() ?? { status: 'ok' };
      if (health.status !== 'ok') ok = false;
      if (health.acceptsWrites === false) acceptsWrites = false;
      subsystems[s.name] = health;
    }
    return { status: ok ? 'ok' : 'degraded', acceptsWrites, subsystems };
  }

  private requireRunning(name: string): void {
    const state = this.states.get(name)!;
    if (state.phase === 'running') return;
    const why = state.phase === 'failed' ? `it failed to start: ${state.cause}` : state.phase === 'stopped' ? 'it is stopped' : 'it has not started';
    throw new ServiceError('NOT_IMPLEMENTED', `the ${name} subsystem is not available: ${why}`);
  }
}
