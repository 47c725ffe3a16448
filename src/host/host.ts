// The plugin host: builds the plugins of the service (plugin.ts) in dependency order, hands each
// the capabilities it needs from the plugins built before it, owns their lifecycle, and joins
// what they mount (routes, request gates, the WebSocket endpoint) for the HTTP server.
//
// Order: a plugin comes after the providers of everything it needs; otherwise the order of the
// list in main.ts is kept. Start runs in that order, stop in reverse. A plugin whose start
// throws is marked failed and logged; a plugin that needs one that is not running does not
// start either ("the storage subsystem is not running"). Either way its routes stay mounted and
// answer 501 naming the subsystem and the cause (SPEC asks this of the monitor; here it is the
// rule for all).

import type { Config } from '../config.js';
import type { WebSocketEndpoint } from '../http/server.js';
import type { Logger } from '../log.js';
import { gauge, type MetricSource } from '../metric-source.js';
import { ServiceError } from '../../shared/errors.js';
import type { Capability, Core, Environment, Health, Mounted, Plugin, Provision, Route } from './plugin.js';

type State = { phase: 'pending' } | { phase: 'running' } | { phase: 'failed'; cause: string } | { phase: 'stopped' };

export interface ServiceHealth {
  status: 'ok' | 'degraded';
  acceptsWrites: boolean;
  subsystems: Record<string, Health>;
}

/** The name that built-in capabilities (provided by whoever runs the host) are provided under. */
const BUILT_IN = '(host)';

interface Built {
  readonly plugin: Plugin<any, any>;
  readonly mounted: Mounted;
  /** Names of the plugins it needs (its providers). */
  readonly dependsOn: readonly string[];
}

export class PluginHost {
  private readonly built: Built[] = [];
  private readonly states = new Map<string, State>();
  private readonly values = new Map<string, unknown>();
  private readonly started: Built[] = [];

  constructor(plugins: readonly Plugin<any, any>[], core: Core, config: Config, env: Environment, builtIns: readonly Provision[] = []) {
    const providers = new Map<string, string>();
    for (const { capability, value } of builtIns) {
      providers.set(capability.name, BUILT_IN);
      this.values.set(capability.name, value);
    }
    const names = new Set<string>();
    for (const plugin of plugins) {
      if (names.has(plugin.name)) throw new Error(`two plugins are named ${plugin.name}`);
      names.add(plugin.name);
      for (const capability of plugin.provides ?? []) {
        const other = providers.get(capability.name);
        if (other) throw new Error(`capability ${capability.name} is provided by both ${other} and ${plugin.name}`);
        providers.set(capability.name, plugin.name);
      }
    }
    for (const plugin of order(plugins, providers)) {
      const dependsOn = dependencies(plugin, providers);
      const needs: Record<string, unknown> = {};
      for (const [key, capability] of Object.entries((plugin.needs ?? {}) as Record<string, Capability<unknown>>)) needs[key] = this.values.get(capability.name);
      const mounted = plugin.create({ ...core, settings: plugin.settings?.(config, env), needs });
      const declared = new Set((plugin.provides ?? []).map((c) => c.name));
      for (const { capability, value } of mounted.provide ?? []) {
        if (!declared.delete(capability.name)) throw new Error(`plugin ${plugin.name} provides ${capability.name} without declaring it`);
        this.values.set(capability.name, value);
      }
      if (declared.size > 0) throw new Error(`plugin ${plugin.name} declares ${[...declared].join(', ')} but did not provide it`);
      if (mounted.entityHooks) core.meta.entities.addHooks(mounted.entityHooks);
      for (const [table, rules] of Object.entries(mounted.entityRules ?? {})) core.meta.entities.addRules(table, rules);
      this.built.push({ plugin, mounted, dependsOn });
      this.states.set(plugin.name, { phase: 'pending' });
    }
  }

  /** Runs every plugin's settings check (before anything of the service is made). */
  static check(plugins: readonly Plugin<any, any>[], config: Config, env: Environment): void {
    for (const plugin of plugins) plugin.check?.(plugin.settings?.(config, env));
  }

  /** The names of the plugins, in the order they are built and started. */
  get names(): string[] {
    return this.built.map((b) => b.plugin.name);
  }

  /** The value of a capability (for the code that runs the host: the HTTP server's token check). */
  capability<T>(capability: Capability<T>): T {
    if (!this.values.has(capability.name)) throw new Error(`no plugin provides ${capability.name}`);
    return this.values.get(capability.name) as T;
  }

  /** Every plugin's routes, each answering 501 while its plugin is not running. */
  routes(): Route[] {
    return this.built.flatMap(({ plugin, mounted }) =>
      (mounted.routes ?? []).map((route): Route => ({
        ...route,
        handler: (req) => {
          this.requireRunning(plugin.name);
          return route.handler(req);
        },
      })),
    );
  }

  /**
   * The refusal of a request before its handler runs, or null. The gates of plugins built later
   * are asked first: on a cluster's secondary "not the leader" (which names the leader) comes
   * before the backup's "a restore is running".
   */
  admit(route: Route): ServiceError | null {
    for (let i = this.built.length - 1; i >= 0; i--) {
      const refused = this.built[i]!.mounted.admit?.(route);
      if (refused) return refused;
    }
    return null;
  }

  /** Every plugin's metric families, and the host's own: which subsystems run. */
  metricSources(): MetricSource[] {
    return [
      gauge('historian_subsystem_up', 'Whether each subsystem runs (1) or failed to start, or is stopped (0).', () =>
        this.built.map(({ plugin }) => ({ labels: { subsystem: plugin.name }, value: this.states.get(plugin.name)?.phase === 'running' ? 1 : 0 })),
      ),
      ...this.built.flatMap(({ mounted }) => mounted.metrics ?? []),
    ];
  }

  /** The one WebSocket endpoint a plugin mounts (live data), refusing upgrades with 501 while it is not running. */
  webSocket(): WebSocketEndpoint | undefined {
    const found = this.built.filter((b) => b.mounted.webSocket);
    if (found.length > 1) throw new Error(`more than one plugin mounts a WebSocket endpoint: ${found.map((b) => b.plugin.name).join(', ')}`);
    const owner = found[0];
    if (!owner) return undefined;
    const endpoint = owner.mounted.webSocket!;
    return {
      ...endpoint,
      authenticate: (headers, query) => {
        this.requireRunning(owner.plugin.name);
        return endpoint.authenticate(headers, query);
      },
    };
  }

  /** Starts each plugin in order; one that throws (or needs one that is not running) is marked failed, logged, and skipped. */
  async start(log: Logger): Promise<void> {
    for (const built of this.built) {
      const name = built.plugin.name;
      const began = performance.now();
      try {
        const down = built.dependsOn.find((provider) => provider !== BUILT_IN && this.states.get(provider)?.phase !== 'running');
        if (down) throw new Error(`the ${down} subsystem is not running`);
        await built.mounted.start?.();
        this.states.set(name, { phase: 'running' });
        this.started.push(built);
        log.info({ subsystem: name, ms: Math.round(performance.now() - began) }, 'subsystem started');
      } catch (err) {
        const cause = (err as Error)?.message ?? String(err);
        this.states.set(name, { phase: 'failed', cause });
        log.error({ subsystem: name, err: String((err as Error)?.stack ?? err) }, 'subsystem failed to start; its routes answer 501');
      }
    }
  }

  /** Stops what started, in reverse order; a failing stop is logged and the others still stop. */
  async stop(log: Logger): Promise<void> {
    for (const built of this.started.splice(0).reverse()) {
      try {
        await built.mounted.stop?.();
      } catch (err) {
        log.error({ subsystem: built.plugin.name, err: String((err as Error)?.stack ?? err) }, 'subsystem failed to stop cleanly');
      }
      this.states.set(built.plugin.name, { phase: 'stopped' });
    }
  }

  health(): ServiceHealth {
    const subsystems: Record<string, Health> = {};
    let acceptsWrites = true;
    let ok = true;
    for (const { plugin, mounted } of this.built) {
      const state = this.states.get(plugin.name)!;
      let health: Health;
      if (state.phase === 'failed') health = { status: 'failed', reason: `failed to start: ${state.cause}`, acceptsWrites: false };
      else if (state.phase !== 'running') health = { status: 'failed', reason: state.phase === 'pending' ? 'not started yet' : 'stopped', acceptsWrites: false };
      else health = mounted.health?.() ?? { status: 'ok' };
      if (health.status !== 'ok') ok = false;
      if (health.acceptsWrites === false) acceptsWrites = false;
      subsystems[plugin.name] = health;
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

/** The plugins that provide what `plugin` needs (the host's built-ins included, by their marker name). */
function dependencies(plugin: Plugin<any, any>, providers: ReadonlyMap<string, string>): string[] {
  const found = new Set<string>();
  for (const capability of Object.values((plugin.needs ?? {}) as Record<string, Capability<unknown>>)) {
    const provider = providers.get(capability.name);
    if (!provider) throw new Error(`plugin ${plugin.name} needs ${capability.name}, which no plugin provides`);
    if (provider === plugin.name) throw new Error(`plugin ${plugin.name} needs ${capability.name}, which it provides itself`);
    found.add(provider);
  }
  return [...found];
}

/** Providers first, the list's own order otherwise; a cycle is a programming error. */
function order(plugins: readonly Plugin<any, any>[], providers: ReadonlyMap<string, string>): Plugin<any, any>[] {
  const placed = new Set<string>([BUILT_IN]);
  const out: Plugin<any, any>[] = [];
  const left = [...plugins];
  while (left.length > 0) {
    const next = left.findIndex((p) => dependencies(p, providers).every((d) => placed.has(d)));
    if (next < 0) throw new Error(`the plugins ${left.map((p) => p.name).join(', ')} need each other in a cycle`);
    const [plugin] = left.splice(next, 1);
    placed.add(plugin!.name);
    out.push(plugin!);
  }
  return out;
}
