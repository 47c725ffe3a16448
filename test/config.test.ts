import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config.js';

function withTempDir(run: (dir: string) => void): void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'historian-config-'));
  try {
    run(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function writeJson(dir: string, name: string, value: unknown): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, JSON.stringify(value));
  return file;
}

/** Asserts loadConfig fails with a ConfigError whose message contains every fragment. */
function assertConfigError(env: NodeJS.ProcessEnv, ...fragments: string[]): void {
  assert.throws(
    () => loadConfig(env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
      for (const fragment of fragments) assert.match(err.message, new RegExp(escape(fragment)));
      return true;
    },
  );
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const DEFAULTS = JSON.parse(fs.readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8'));

test('defaults load, with dataDir made absolute and the result frozen', () => {
  const config = loadConfig({});
  assert.equal(config.server.port, 3030);
  assert.equal(config.server.host, DEFAULTS.server.host);
  assert.equal(config.log.level, 'info');
  assert.equal(config.tls.certFile, null);
  assert.equal(config.auth.scryptCost, 16384);
  assert.equal(config.dataDir, path.resolve('./data'));
  assert.ok(Object.isFrozen(config));
  assert.ok(Object.isFrozen(config.server));
  assert.throws(() => {
    (config.server as { port: number }).port = 1;
  }, TypeError);
});

test('HISTORIAN_CONFIG deep-merges over the defaults', () => {
  withTempDir((dir) => {
    const file = writeJson(dir, 'site.json', {
      server: { port: 0 },
      tls: { certFile: '/etc/site.crt', keyFile: '/etc/site.key' },
      auth: { lockoutFailures: 3 },
      dataDir: dir,
    });
    const config = loadConfig({ HISTORIAN_CONFIG: file });
    assert.equal(config.server.port, 0);
    assert.equal(config.server.host, DEFAULTS.server.host, 'siblings of an overridden key survive');
    assert.equal(config.server.maxBodyBytes, 67108864);
    assert.equal(config.tls.certFile, '/etc/site.crt');
    assert.equal(config.tls.caFile, null);
    assert.equal(config.auth.lockoutFailures, 3);
    assert.equal(config.auth.lockoutSeconds, 900);
    assert.equal(config.dataDir, dir);
  });
});

test('environment overrides beat the config file', () => {
  withTempDir((dir) => {
    const file = writeJson(dir, 'site.json', { server: { port: 4000 }, log: { level: 'warn' } });
    const config = loadConfig({
      HISTORIAN_CONFIG: file,
      HISTORIAN_PORT: '4443',
      HISTORIAN_DATA_DIR: 'relative/data',
      HISTORIAN_LOG_LEVEL: 'debug',
      HISTORIAN_LOG_FORMAT: 'pretty',
      HISTORIAN_ADMIN_EMAIL: 'ops@plant.example',
    });
    assert.equal(config.log.format, 'pretty');
    assert.equal(config.server.port, 4443);
    assert.equal(config.dataDir, path.resolve('relative/data'));
    assert.equal(config.log.level, 'debug');
    assert.equal(config.auth.adminEmail, 'ops@plant.example');
  });
});

test('HISTORIAN_PORT must be an integer', () => {
  assertConfigError({ HISTORIAN_PORT: 'abc' }, 'server.port', 'HISTORIAN_PORT');
  assertConfigError({ HISTORIAN_PORT: '80.5' }, 'server.port', 'HISTORIAN_PORT');
  assertConfigError({ HISTORIAN_PORT: '70000' }, 'invalid setting server.port (from HISTORIAN_PORT): must be <= 65535');
});

test('invalid values name the dotted setting', () => {
  withTempDir((dir) => {
    const cases: Array<[unknown, string]> = [
      [{ server: { port: 70000 } }, 'invalid setting server.port: must be <= 65535'],
      [{ server: { prot: 1 } }, 'unknown setting server.prot'],
      [{ serverr: {} }, 'unknown setting serverr'],
      [{ auth: { lockoutSeconds: 'soon' } }, 'invalid setting auth.lockoutSeconds: must be integer'],
      [{ server: { maxBodyBytes: 0 } }, 'invalid setting server.maxBodyBytes'],
      [{ tls: { caFile: 5 } }, 'invalid setting tls.caFile'],
      [{ log: { level: 'verbose' } }, 'invalid setting log.level: must be one of'],
      [{ auth: { scryptCost: 3000 } }, 'invalid setting auth.scryptCost'],
      [{ server: 'everywhere' }, 'invalid setting server: must be object'],
      [JSON.parse('{"__proto__": {"polluted": true}}'), 'unknown setting __proto__'],
    ];
    for (const [overrides, expected] of cases) {
      const file = writeJson(dir, 'bad.json', overrides);
      assertConfigError({ HISTORIAN_CONFIG: file }, expected);
    }
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
  });
});

test('an invalid log level from the environment names its variable', () => {
  assertConfigError({ HISTORIAN_LOG_LEVEL: 'loud' }, 'log.level (from HISTORIAN_LOG_LEVEL)');
  assertConfigError({ HISTORIAN_LOG_FORMAT: 'fancy' }, 'log.format (from HISTORIAN_LOG_FORMAT)');
});

test('a missing or unparsable HISTORIAN_CONFIG file names the variable and the path', () => {
  withTempDir((dir) => {
    const missing = path.join(dir, 'nope.json');
    assertConfigError({ HISTORIAN_CONFIG: missing }, 'HISTORIAN_CONFIG', missing);

    const broken = path.join(dir, 'broken.json');
    fs.writeFileSync(broken, '{"server": ');
    assertConfigError({ HISTORIAN_CONFIG: broken }, 'HISTORIAN_CONFIG', broken, 'not valid JSON');

    const notObject = writeJson(dir, 'list.json', [1, 2]);
    assertConfigError({ HISTORIAN_CONFIG: notObject }, 'HISTORIAN_CONFIG', notObject);
  });
});

test('defaultsPath replaces config/default.json', () => {
  withTempDir((dir) => {
    const defaults = structuredClone(DEFAULTS);
    defaults.server.port = 1234;
    const file = writeJson(dir, 'defaults.json', defaults);
    assert.equal(loadConfig({}, { defaultsPath: file }).server.port, 1234);

    delete defaults.auth.scryptCost;
    writeJson(dir, 'defaults.json', defaults);
    assert.throws(() => loadConfig({}, { defaultsPath: file }), /missing setting auth\.scryptCost/);
  });
});

test('log.format auto is pretty at a terminal and JSON otherwise; a set format stays', () => {
  assert.equal(loadConfig({}, { stdoutIsTerminal: true }).log.format, 'pretty');
  assert.equal(loadConfig({}, { stdoutIsTerminal: false }).log.format, 'json');
  assert.equal(loadConfig({ HISTORIAN_LOG_FORMAT: 'json' }, { stdoutIsTerminal: true }).log.format, 'json');
  assert.equal(loadConfig({ HISTORIAN_LOG_FORMAT: 'pretty' }, { stdoutIsTerminal: false }).log.format, 'pretty');
});
