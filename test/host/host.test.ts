// The plugin host on plugins made for the test, over a real metadata store: the order it builds
// and starts them in (providers first, the list's order otherwise), what a failed start does to
// the plugins that need it, stop in reverse, the checks of what plugins declare, the 501 of a
// route whose plugin is not running, and the order of request gates.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ServiceClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { PluginHost } from '../../src/host/host.js';
import { LeadershipState } from '../../src/host/leadership.js';
import { capability, definePlugin, provide, type Core, type Plugin, type Route } from '../../src/host/plugin.js';
import { createLogger } from '../../src/log.js';
import { MetaStore } from '../../src/meta/store.js';
import { ServiceError } from '../../shared/errors.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'host-'));
const log = createLogger('silent');
const clock = new ServiceClock();
const meta = MetaStore.open({ dataDir: dir, maxListRows: 100, regexpBudgetSteps: 100_000 }, clock, log);
const core: Core = { log, clock, meta, leadership: new LeadershipState(false) };
const config = loadConfig({ HISTORIAN_DATA_DIR: dir });
after(async () => {
  await meta.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const COUNTER = capability<{ next(): number }>('test.counter');
const GREETING = capability<string>('test.greeting');

/** A plugin that records its lifecycle in `events` and may fail to start. */
function recorder(name: string, events: string[], options: { failStart?: string; needs?: Record<string, ReturnType<typeof capability<any>>>; provides?: ReturnType<typeof capability<any>>[]; value?: unknown } = {}): Plugin<any, any> {
  return definePlugin({
    name,
    needs: options.needs ?? {},
    provides: options.provides ?? [],
    create({ needs }) {
      events.push(`create ${name}${Object.keys(needs).length ? ` with ${Object.keys(needs).join(',')}` : ''}`);
      return {
        provide: (options.provides ?? []).map((c) => provide(c, options.value)),
        routes: [route(`/test/${name}`)],
        start() {
          if (options.failStart) throw new Error(options.failStart);
          events.push(`start ${name}`);
        },
        stop: () => void events.push(`stop ${name}`),
      };
    },
  });
}

function route(p: string): Route {
  return { method: 'GET', path: p, auth: 'public', tag: 'test', summary: p, responses: { 200: { description: 'ok' } }, handler: () => ({ body: { path: p } }) };
}

function handlerOf(host: PluginHost, p: string) {
  return host.routes().find((r) => r.path === p)!.handler;
}

test('providers are built and started before what needs them, the list order otherwise; stop runs in reverse', async () => {
  const events: string[] = [];
  let n = 0;
  const plugins = [
    recorder('greeter', events, { needs: { counter: COUNTER }, provides: [GREETING], value: 'hello' }),
    recorder('plain', events),
    recorder('counter', events, { provides: [COUNTER], value: { next: () => ++n } }),
    recorder('listener', events, { needs: { greeting: GREETING, counter: COUNTER } }),
  ];
  const host = new PluginHost(plugins, core, config, {});
  assert.deepEqual(host.names, ['plain', 'counter', 'greeter', 'listener']);
  assert.equal(host.capability(GREETING), 'hello');
  await host.start(log);
  await host.stop(log);
  assert.deepEqual(events, [
    'create plain', 'create counter', 'create greeter with counter', 'create listener with greeting,counter',
    'start plain', 'start counter', 'start greeter', 'start listener',
    'stop listener', 'stop greeter', 'stop counter', 'stop plain',
  ]);
});

test('a plugin that fails to start, and every one that needs it, answer 501 naming it; the others serve', async () => {
  const events: string[] = [];
  const host = new PluginHost([
    recorder('counter', events, { provides: [COUNTER], value: { next: () => 1 }, failStart: 'the disk is a file' }),
    recorder('greeter', events, { needs: { counter: COUNTER }, provides: [GREETING], value: 'hi' }),
    recorder('listener', events, { needs: { greeting: GREETING } }),
    recorder('plain', events),
  ], core, config, {});
  await host.start(log);
  const health = host.health();
  assert.equal(health.status, 'degraded');
  assert.equal(health.acceptsWrites, false);
  assert.deepEqual(health.subsystems.counter, { status: 'failed', reason: 'failed to start: the disk is a file', acceptsWrites: false });
  assert.equal(health.subsystems.greeter!.reason, 'failed to start: the counter subsystem is not running');
  assert.equal(health.subsystems.listener!.reason, 'failed to start: the greeter subsystem is not running');
  assert.deepEqual(health.subsystems.plain, { status: 'ok' });
  assert.throws(() => handlerOf(host, '/test/greeter')({} as never), (err) => err instanceof ServiceError && err.status === 501 && err.message === 'the greeter subsystem is not available: it failed to start: the counter subsystem is not running');
  assert.deepEqual(await handlerOf(host, '/test/plain')({} as never), { body: { path: '/test/plain' } });
  await host.stop(log);
  assert.deepEqual(events.filter((e) => e.startsWith('stop')), ['stop plain'], 'only what started is stopped');
  assert.throws(() => handlerOf(host, '/test/plain')({} as never), /the plain subsystem is not available: it is stopped/);
});

test('what plugins declare is checked when the host is built', () => {
  const events: string[] = [];
  assert.throws(() => new PluginHost([recorder('a', events, { needs: { g: GREETING } })], core, config, {}), /plugin a needs test\.greeting, which no plugin provides/);
  assert.throws(
    () => new PluginHost([recorder('a', events, { needs: { g: GREETING }, provides: [COUNTER] }), recorder('b', events, { needs: { c: COUNTER }, provides: [GREETING] })], core, config, {}),
    /the plugins a, b need each other in a cycle/,
  );
  assert.throws(() => new PluginHost([recorder('a', events, { provides: [COUNTER] }), recorder('b', events, { provides: [COUNTER] })], core, config, {}), /provided by both a and b/);
  assert.throws(() => new PluginHost([recorder('a', events), recorder('a', events)], core, config, {}), /two plugins are named a/);
  const liar = definePlugin({ name: 'liar', provides: [COUNTER], create: () => ({}) });
  assert.throws(() => new PluginHost([liar], core, config, {}), /liar declares test\.counter but did not provide it/);
});

test('request gates: the plugin built later is asked first; a settings check runs before anything is built', () => {
  const refusing = (name: string, needs: Record<string, ReturnType<typeof capability<any>>>, provides: ReturnType<typeof capability<any>>[]) =>
    definePlugin({
      name,
      needs,
      provides,
      create: () => ({ provide: provides.map((c) => provide(c, name)), admit: () => new ServiceError('UNAVAILABLE', `${name} refuses`) }),
    });
  const host = new PluginHost([refusing('later', { g: GREETING }, []), refusing('earlier', {}, [GREETING])], core, config, {});
  assert.deepEqual(host.names, ['earlier', 'later']);
  assert.equal(host.admit(route('/x'))?.message, 'later refuses');

  let built = false;
  const checked = definePlugin({
    name: 'checked',
    settings: (c) => c.monitor.defaultTickRateMs,
    check(rate) {
      if (rate < 1_000_000) throw new Error(`monitor.defaultTickRateMs ${rate} is too small for this test`);
    },
    create: () => ((built = true), {}),
  });
  assert.throws(() => PluginHost.check([checked], config, {}), /monitor\.defaultTickRateMs 1000 is too small/);
  assert.equal(built, false);
});
