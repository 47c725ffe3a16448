// The OPC UA driver against a real node-opcua server (a child process), through a recording sink:
// values with the server's source timestamps, browse roots, Bad/Uncertain skipped and counted,
// Sign + username with the server trusted by thumbprint (and refused without it), user
// certificate auth, a server restart (nothing stored for the outage, recovery after it) and a
// network loss behind a relay with the gap back-filled from the server's history.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CollectorDefinition, RunningCollector } from '../../src/collectors/driver.js';
import { ensureAppCertificate } from '../../src/collectors/opcua/app-certificate.js';
import { opcuaDriver } from '../../src/collectors/opcua/driver.js';
import { startOpcuaServer, variableInfo, type TestOpcuaServer } from '../support/opcua-server.js';
import { RecordingSink } from '../support/recording-sink.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

const PASSWORD = 'pl4nt-operator-Secret!';
const SECONDS = (n: number) => ({ timeoutMs: n * 1000, intervalMs: 50 });

let secretsDir: string;
let appCertPem: string;
let server: TestOpcuaServer;
const running: RunningCollector[] = [];

function definition(connection: Record<string, unknown>, items: Array<Record<string, unknown>>, id = 'c1'): CollectorDefinition {
  return { id, name: `collector ${id}`, kind: 'opcua', organization: 'org', site: 'site', unit: 'unit', grid: 'grid', connection, items };
}

function start(connection: Record<string, unknown>, items: Array<Record<string, unknown>>): RecordingSink {
  opcuaDriver.validate(connection, items);
  const rec = new RecordingSink();
  running.push(opcuaDriver.start(definition(connection, items), rec.sink, { secretsDir, stateDir: path.join(secretsDir, '..', 'state'), now: () => Date.now() }));
  return rec;
}

async function stopAll(): Promise<void> {
  await Promise.all(running.splice(0).map((r) => r.stop()));
}

before(async () => {
  secretsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-secrets-'));
  appCertPem = ensureAppCertificate(secretsDir).certPem;
  server = await startOpcuaServer({ users: { operator: PASSWORD }, trustedClientPems: [appCertPem] });
});

after(async () => {
  await stopAll();
  await server?.dispose();
  fs.rmSync(secretsDir, { recursive: true, force: true });
});

describe('OPC UA driver: security None, anonymous', { concurrency: false }, () => {
  after(stopAll);

  test('explicit items arrive with the server\'s source timestamps; an unknown node is left out', async () => {
    const d = variableInfo(0);
    const i = variableInfo(4);
    const b = variableInfo(7);
    const t0 = Date.now();
    const rec = start({ endpoint_url: server.endpointUrl, security_mode: 'None', auth: 'anonymous', publishing_interval_ms: 100 }, [
      { node_id: d.nodeId, tag: 'boiler/temp', sampling_interval_ms: 50 },
      { node_id: i.nodeId, tag: 'boiler/count', sampling_interval_ms: 50 },
      { node_id: b.nodeId, tag: 'boiler/on', sampling_interval_ms: 50 },
      { node_id: 'ns=1;s=Plant.NoSuchNode', tag: 'missing' },
    ]);
    await waitFor(() => rec.state?.state === 'connected', 'connected', SECONDS(20));
    await waitFor(() => rec.valuesOf('boiler/temp').length >= 5 && rec.valuesOf('boiler/on').length >= 3, 'values of the items', SECONDS(10));
    assert.equal(running.at(-1)!.itemCount(), 3);
    assert.deepEqual([...rec.tags()].sort(), ['boiler/count', 'boiler/on', 'boiler/temp']);
    const temps = rec.valuesOf('boiler/temp');
    // Variable 0 (period 100 ms) holds changes + 0.5; successive values one change apart, timestamps rising.
    for (let k = 1; k < temps.length; k++) {
      assert.ok(temps[k]!.ts > temps[k - 1]!.ts, 'source timestamps rise');
      assert.equal(temps[k]!.value - Math.floor(temps[k]!.value), 0.5);
    }
    for (const v of rec.values) assert.ok(v.ts >= t0 - 5000 && v.ts <= Date.now() + 1000, `timestamp ${v.ts} is the server's, near now`);
    assert.ok(rec.valuesOf('boiler/on').every((v) => v.value === 0 || v.value === 1));
    assert.ok(rec.valuesOf('boiler/count').every((v) => Number.isInteger(v.value)));
  });

  test('a browse root collects every numeric variable below it, Bad and Uncertain values skipped and counted', async () => {
    const rec = start({ endpoint_url: server.endpointUrl, publishing_interval_ms: 200 }, [
      { browse: 'ns=1;s=Plant', tag_prefix: 'plant/', sampling_interval_ms: 100 },
    ]);
    await waitFor(() => rec.state?.state === 'connected', 'connected', SECONDS(20));
    // 1,000 generated variables and one Info/Setpoint per line; the String Label of each line is not numeric.
    assert.equal(running.at(-1)!.itemCount(), 1010);
    await waitFor(() => rec.tags().size >= 1010, 'a value of every numeric variable', SECONDS(15));
    const tags = rec.tags();
    assert.ok(tags.has(`plant/${variableInfo(0).path}`));
    assert.ok(tags.has('plant/Line09/Info/Setpoint'));
    // A value that never changed is stored with the server's source timestamp, exactly.
    assert.deepEqual(rec.valuesOf('plant/Line09/Info/Setpoint').map((v) => [v.ts, v.value]), [[server.setpointTs, 51]]);
    assert.ok(![...tags].some((t) => t.endsWith('/Label')));
    await waitFor(() => (rec.skipped.get('bad status') ?? 0) >= 5 && (rec.skipped.get('uncertain status') ?? 0) >= 4, 'Bad and Uncertain values counted', SECONDS(10));
    // A Bad variable's stored values are only its Good ones: odd change counts (value = changes + 0.5 … by kind).
    const bad = variableInfo(199);
    assert.ok(bad.bad);
    for (const v of rec.valuesOf(`plant/${bad.path}`)) assert.ok(Number.isFinite(v.value));
  });

  test('keep_uncertain stores Uncertain values', async () => {
    const unc = variableInfo(124);
    assert.ok(unc.uncertain);
    const rec = start({ endpoint_url: server.endpointUrl, publishing_interval_ms: 100, keep_uncertain: true }, [
      { node_id: unc.nodeId, tag: 'unc', sampling_interval_ms: 50 },
    ]);
    await waitFor(() => rec.valuesOf('unc').length >= 6, 'uncertain values stored', SECONDS(20));
    assert.equal(rec.skipped.get('uncertain status') ?? 0, 0);
    // Variable 124 is an Int32 whose value is its change count: odd counts are Good, even ones Uncertain.
    const counts = rec.valuesOf('unc').map((v) => v.value);
    assert.ok(counts.some((n) => n % 2 === 0) && counts.some((n) => n % 2 === 1), `values ${counts.join(',')}`);
  });
});

describe('OPC UA driver: Sign with username and certificate auth, trust by thumbprint', { concurrency: false }, () => {
  after(stopAll);
  const item = () => [{ node_id: variableInfo(0).nodeId, tag: 'signed', sampling_interval_ms: 50 }];

  test('Sign + username with the right thumbprint connects and collects', async () => {
    const rec = start({
      endpoint_url: server.endpointUrl, security_mode: 'Sign', security_policy: 'Basic256Sha256', auth: 'username',
      username: 'operator', password: PASSWORD, publishing_interval_ms: 100, server_certificate_sha1: server.thumbprint.toUpperCase().match(/../g)!.join(':'),
    }, item());
    await waitFor(() => rec.valuesOf('signed').length >= 3, 'values over a signed channel', SECONDS(30));
    assert.equal(rec.state?.state, 'connected');
    assert.ok(!rec.logLines.join('\n').includes(PASSWORD), 'the password is never logged');
  });

  test('SignAndEncrypt works the same', async () => {
    const rec = start({
      endpoint_url: server.endpointUrl, security_mode: 'SignAndEncrypt', auth: 'username',
      username: 'operator', password: PASSWORD, publishing_interval_ms: 100, server_certificate_sha1: server.thumbprint,
    }, item());
    await waitFor(() => rec.valuesOf('signed').length >= 3, 'values over an encrypted channel', SECONDS(30));
  });

  test('without a thumbprint, or with another one, the collector fails quoting the presented thumbprint', async () => {
    const missing = start({ endpoint_url: server.endpointUrl, security_mode: 'Sign', auth: 'username', username: 'operator', password: PASSWORD }, item());
    const wrong = start({
      endpoint_url: server.endpointUrl, security_mode: 'Sign', auth: 'username', username: 'operator', password: PASSWORD,
      server_certificate_sha1: 'aa'.repeat(20),
    }, item());
    for (const rec of [missing, wrong]) {
      await waitFor(() => rec.state?.state === 'failed', 'failed', SECONDS(30));
      assert.ok(rec.state!.error!.includes(server.thumbprint), rec.state!.error);
      assert.equal(rec.values.length, 0);
      assert.ok(!rec.states.some((s) => s.state === 'connected'));
    }
    assert.match(wrong.state!.error!, /not the trusted a{40}/);
    assert.match(missing.state!.error!, /server_certificate_sha1/);
  });

  test('a wrong password fails without the password anywhere', async () => {
    const rec = start({
      endpoint_url: server.endpointUrl, security_mode: 'Sign', auth: 'username', username: 'operator', password: `${PASSWORD}-wrong`,
      server_certificate_sha1: server.thumbprint,
    }, item());
    await waitFor(() => rec.state?.state === 'failed', 'failed', SECONDS(30));
    assert.match(rec.state!.error!, /BadUserAccessDenied|BadIdentityToken/);
    const everything = rec.logLines.join('\n') + JSON.stringify(rec.states);
    assert.ok(!everything.includes(PASSWORD), 'the password is never logged');
  });
});

describe('OPC UA driver: user certificate auth', { concurrency: false }, () => {
  let certServer: TestOpcuaServer;
  let user: ReturnType<typeof ensureAppCertificate>;
  before(async () => {
    user = ensureAppCertificate(fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-user-')), 'operator-station');
    certServer = await startOpcuaServer({ variables: 20, lines: 2, allowAnonymous: false, trustedClientPems: [appCertPem], trustedUserPems: [user.certPem] });
  });
  after(async () => {
    await stopAll();
    await certServer.dispose();
  });

  test('a trusted user certificate opens the session', async () => {
    const rec = start({
      endpoint_url: certServer.endpointUrl, security_mode: 'Sign', auth: 'certificate', server_certificate_sha1: certServer.thumbprint,
      certificate_pem: user.certPem, private_key_pem: fs.readFileSync(user.keyFile, 'utf8'), publishing_interval_ms: 100,
    }, [{ node_id: variableInfo(0, 20, 2).nodeId, tag: 'by-cert', sampling_interval_ms: 50 }]);
    await waitFor(() => rec.valuesOf('by-cert').length >= 3, 'values with certificate auth', SECONDS(30));
  });
});

describe('OPC UA driver: outages', { concurrency: false }, () => {
  after(stopAll);

  test('a server restart: reconnecting, nothing stored for the outage, connected again with values after it', async () => {
    const own = await startOpcuaServer({ variables: 50, lines: 5, trustedClientPems: [appCertPem] });
    try {
      const rec = start({ endpoint_url: own.endpointUrl, publishing_interval_ms: 100 }, [
        { browse: 'ns=1;s=Plant', tag_prefix: 'r/', sampling_interval_ms: 50 },
      ]);
      await waitFor(() => rec.state?.state === 'connected' && rec.values.length > 200, 'first values', SECONDS(20));
      const killedAt = Date.now();
      await own.stop('SIGKILL');
      await waitFor(() => rec.state?.state === 'reconnecting', 'reconnecting after the server died', SECONDS(20));
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const restartAt = Date.now();
      await own.start();
      const before = rec.values.length;
      await waitFor(() => rec.state?.state === 'connected', 'connected again', SECONDS(40));
      await waitFor(() => rec.values.length > before + 200, 'values after the restart', SECONDS(20));
      // No value carries a timestamp inside the outage (the server was down: nothing to report, nothing invented).
      const inside = rec.values.filter((v) => v.ts > killedAt && v.ts < restartAt);
      assert.deepEqual(inside, []);
      assert.ok(rec.values.some((v) => v.ts > restartAt));
      assert.equal(running.at(-1)!.itemCount(), 55);
      assert.deepEqual(rec.backfill, [], 'a restarted server has no history of its outage');
    } finally {
      await stopAll();
      await own.dispose();
    }
  });

  test('a network loss: the gap is back-filled from the server\'s history, flagged as back-fill', async () => {
    const hist = await startOpcuaServer({ variables: 20, lines: 2, historize: true, periodMs: 100, trustedClientPems: [appCertPem] });
    const proxy = await TcpProxy.start(hist.options.port);
    try {
      const endpoint = hist.endpointUrl.replace(`:${hist.options.port}/`, `:${proxy.port}/`);
      const tag = `h/${variableInfo(0, 20, 2).path}`;
      const rec = start({ endpoint_url: endpoint, publishing_interval_ms: 100 }, [
        { browse: 'ns=1;s=Plant', tag_prefix: 'h/', sampling_interval_ms: 50 },
      ]);
      await waitFor(() => rec.state?.state === 'connected' && rec.valuesOf(tag).length > 10, 'first values', SECONDS(20));
      const cutAt = Date.now();
      proxy.cut();
      await waitFor(() => rec.state?.state === 'reconnecting', 'reconnecting after the cut', SECONDS(20));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const restoredAt = Date.now();
      proxy.restore();
      await waitFor(() => rec.state?.state === 'connected', 'connected again', SECONDS(40));
      await waitFor(() => rec.backfill.some((v) => v.tag === tag), 'back-filled values', SECONDS(20));
      const filled = rec.backfill.filter((v) => v.tag === tag && v.ts > cutAt && v.ts < restoredAt);
      // Variable 0 changes every 100 ms: a 3 s outage is about 30 values, all back-filled.
      assert.ok(filled.length >= 20, `${filled.length} values back-filled inside the outage`);
      const live = rec.valuesOf(tag);
      const lastBefore = Math.max(...live.filter((v) => v.ts <= cutAt).map((v) => v.ts));
      assert.ok(rec.backfill.filter((v) => v.tag === tag).every((v) => v.ts > lastBefore), 'back-fill starts after the last live value');
      // Consecutive changes: back-filled values of variable 0 are change counts + 0.5, none missing between the first and last.
      const counts = rec.backfill.filter((v) => v.tag === tag).map((v) => v.value - 0.5).sort((a, b) => a - b);
      assert.equal(counts.at(-1)! - counts[0]! + 1, counts.length, 'no change missing from the back-fill');
    } finally {
      await stopAll();
      await proxy.stop();
      await hist.dispose();
    }
  });

  test('a black-holed network (no FIN, no RST) is noticed by the keep-alive watchdog and recovered from', async () => {
    const own = await startOpcuaServer({ variables: 10, lines: 1, periodMs: 100, trustedClientPems: [appCertPem] });
    const proxy = await TcpProxy.start(own.options.port);
    try {
      const rec = start({ endpoint_url: own.endpointUrl.replace(`:${own.options.port}/`, `:${proxy.port}/`), publishing_interval_ms: 200 }, [
        { browse: 'ns=1;s=Plant', tag_prefix: 'bh/' },
      ]);
      await waitFor(() => rec.state?.state === 'connected' && rec.values.length > 20, 'first values', SECONDS(20));
      proxy.freeze();
      const frozenAt = Date.now();
      await waitFor(() => rec.state?.state === 'reconnecting', 'reconnecting once the server is silent', SECONDS(30));
      assert.match(rec.state!.error!, /no answer from the server/);
      assert.ok(Date.now() - frozenAt >= 9000, 'not before the watchdog\'s 10 s');
      proxy.restore();
      const before = rec.values.length;
      await waitFor(() => rec.state?.state === 'connected' && rec.values.length > before + 10, 'connected again with values', SECONDS(30));
    } finally {
      await stopAll();
      await proxy.stop();
      await own.dispose();
    }
  });

  test('a server that sends garbage: the collector keeps retrying, stores nothing and stops at once', async () => {
    const garbage = [
      Buffer.alloc(64 * 1024, 0xff),
      Buffer.concat([Buffer.from('ACKF'), Buffer.from([0xff, 0xff, 0xff, 0x7f]), Buffer.alloc(100, 7)]),
      Buffer.concat([Buffer.from('ERRF'), Buffer.from([0x10, 0, 0, 0]), Buffer.alloc(8, 0)]),
    ];
    let connections = 0;
    const liar = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => socket.end(garbage[connections++ % garbage.length]));
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    try {
      const port = (liar.address() as net.AddressInfo).port;
      const rec = start({ endpoint_url: `opc.tcp://127.0.0.1:${port}/UA/Liar` }, [{ node_id: 'i=2258', tag: 'now' }]);
      await waitFor(() => connections >= 3, 'three tries', SECONDS(30));
      assert.ok(rec.states.every((s) => s.state === 'reconnecting'), JSON.stringify(rec.states));
      assert.equal(rec.values.length, 0);
      const t = Date.now();
      await stopAll();
      assert.ok(Date.now() - t < 5000, 'stopped promptly');
    } finally {
      await new Promise<void>((resolve) => liar.close(() => resolve()));
    }
  });
});
