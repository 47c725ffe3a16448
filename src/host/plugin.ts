// How a part of the service plugs in. Every subsystem folder exports one plugin: its name, the
// narrow interfaces of other subsystems it needs (capabilities, each declared in the providing
// folder's api.ts), the part of the settings it reads, and `create`, which builds it from those
// and says what it mounts: routes, the capabilities it provides, entity hooks, a request gate,
// a WebSocket endpoint, its metric families, and how it starts, stops and reports its health. The host (host.ts)
// builds plugins in dependency order, starts them in that order, stops them in reverse, and keeps
// one that failed to start mounted with its routes answering 501 naming it and the cause. In the
// spirit of fastify's `register` and `onClose`, and of Prometheus' rule manager, which is built
// from a query function, a notify function and an appender and never sees the TSDB.

import type { ServiceClock } from '../clock.js';
import type { Config } from '../config.js';
import type { Request, RouteDef } from '../http/route.js';
import type { WebSocketEndpoint } from '../http/server.js';
import type { Logger } from '../log.js';
import type { MetricSource } from '../metric-source.js';
import type { AccessGrant } from '../meta/access-grant.js';
import type { EntityHooks } from '../meta/entities.js';
import type { EntityRules } from '../meta/entity-rules.js';
import type { MetaStore } from '../meta/store.js';
import type { ServiceError } from '../../shared/errors.js';
import type { Leadership } from './leadership.js';

/** A route of a subsystem: its request carries the caller's AccessGrant (`req.grant`). */
export type Route = RouteDef<AccessGrant>;
export type GrantedRequest = Request<AccessGrant>;

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

/**
 * A narrow interface one plugin provides and others need, named once (in the provider's
 * api.ts). The type parameter is the interface; the object itself is only its name.
 */
export interface Capability<T> {
  readonly name: string;
  /** Never set: carries the interface's type. */
  readonly interface?: T;
}

export function capability<T>(name: string): Capability<T> {
  return { name };
}

/** One capability with the value that implements it (Mounted.provide). */
export interface Provision {
  readonly capability: Capability<unknown>;
  readonly value: unknown;
}

export function provide<T>(capability: Capability<T>, value: T): Provision {
  return { capability: capability as Capability<unknown>, value };
}

export type Needs = Record<string, Capability<any>>;

/** The values of the capabilities a plugin needs, under the names it gave them. */
export type Resolved<N extends Needs> = { readonly [K in keyof N]: N[K] extends Capability<infer T> ? T : never };

/** What every plugin is given: the metadata store, the clock, the log, and whether this node leads. */
export interface Core {
  readonly log: Logger;
  readonly clock: ServiceClock;
  readonly meta: MetaStore;
  readonly leadership: Leadership;
}

export interface PluginContext<S, N extends Needs> extends Core {
  /** The part of the settings the plugin declared (Plugin.settings). */
  readonly settings: S;
  readonly needs: Resolved<N>;
}

/** The environment variables a settings selector may read (secrets that are not settings). */
export type Environment = Readonly<Record<string, string | undefined>>;

export interface Plugin<S = unknown, N extends Needs = Needs> {
  /** Short name, used in logs, health and 501 messages: `storage`, `monitor`. */
  readonly name: string;
  /** The settings it reads: its own section, and what else it names here (nothing else reaches it). */
  readonly settings?: (config: Config, env: Environment) => S;
  readonly needs?: N;
  /** The capabilities `create` provides (each has exactly one provider). */
  readonly provides?: readonly Capability<unknown>[];
  /**
   * Checks its settings before anything of the service is made (no data dir, CA or store yet):
   * throws a StartupError naming a setting that cannot work, so a bad start leaves nothing behind.
   */
  check?(settings: S): void;
  /**
   * Builds the subsystem from its settings and needs. A throw here fails the whole start; what
   * can fail for reasons of the machine (files, workers, the network) belongs in `start`.
   */
  create(context: PluginContext<S, N>): Mounted;
}

/** What a plugin's `create` mounts. */
export interface Mounted {
  readonly provide?: readonly Provision[];
  /** Mounted whatever happens at start; each answers 501 while the subsystem is not running. */
  readonly routes?: readonly Route[];
  /** Served by the HTTP server itself (an upgrade), refused with 501 while the subsystem is not running. */
  readonly webSocket?: WebSocketEndpoint;
  /** Called by the entity store inside every entity write (registered at creation, running or not). */
  readonly entityHooks?: EntityHooks;
  /** Rules of the entity tables it owns that need its state (the connector's key for `connections`). */
  readonly entityRules?: Readonly<Record<string, EntityRules>>;
  /** Refuses a request before its handler runs (a restore under way; a node that does not lead), or null. */
  readonly admit?: (route: Route) => ServiceError | null;
  /** Throws when it cannot run; the service then goes on without it. */
  start?(): Promise<void> | void;
  /** Called in reverse order of start, only for subsystems that started. */
  stop?(): Promise<void> | void;
  /** Current health while it runs. */
  health?(): Health;
  /**
   * Its families for GET /metrics (src/metric-source.ts), read at each scrape from the counters
   * it keeps anyway; read whether or not it runs, so each must answer from whatever state it has.
   */
  readonly metrics?: readonly MetricSource[];
}

/** Declares a plugin (an identity function: it lets TypeScript infer the settings and needs of `create`). */
export function definePlugin<S = undefined, N extends Needs = {}>(plugin: Plugin<S, N>): Plugin<S, N> {
  return plugin;
}
