// OPC UA collectors end to end: the real service (test/api/harness.ts) and a real node-opcua server
// (test/support/opcua-server.ts) that trusts the service's application certificate fetched from
// GET /svcapi/collectors/opcua/certificate. Collectors are saved with POST /svcapi/collectors and
// their values read back with fast_query and lastlist; states and counters from
// GET /svcapi/collectors/{id}/status; the password never in a log line or an answer.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../api/harness.js';
import { startOpcuaServer, variableInfo, type TestOpcuaServer } from '../support/opcua-server.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait-for.js';

const PASSWORD = 'Opc-Operator-pw-7781';
const SCOPE = { organization: 'acme', site: 'north', unit: 'boiler-1', grid: 'main' };
const WAIT = (seconds: number) => ({ timeoutMs: seconds * 1000, intervalMs: 200 });
const qs = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();

describe('OPC UA collectors through the service', { concurrency: false }, () => {
  let svc: TestService;
  let admin: string;
  let appPem: string;
  let server: TestOpcuaServer;

  const status = async (id: string) => {
    const res = await svc.get(`/svcapi/collectors/${id}/status`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body as { state: string; error?: string; items: number; values_stored: number; values_skipped: number; last_value_ms: number | null };
  };
  const create = async (name: string, connection: Record<string, unknown>, items: Array<Record<string, unknown>>): Promise<string> => {
    const res = await svc.post('/svcapi/collectors', { name, kind: 'opcua', enabled: true, ...SCOPE, connection, items }, admin);
    assert.equal(res.status, 200, res.text);
    return res.body.id as string;
  };
  const remove = async (id: string) => assert.equal((await svc.request('DELETE', `/svcapi/collectors/${id}`, { token: admin })).status, 200);
  const points = async (tag: string, start = 0): Promise<Array<[number, number]>> => {
    const res = await svc.get(`/svcapi/fast_query?${qs({ tags: tag, start, end: Date.now() + 60_000, ...SCOPE })}`, admin);
    assert.equal(res.status, 200, res.text);
    return res.body[tag] ?? [];
  };
  const signed = (extra: Record<string, unknown> = {}) => ({
    endpoint_url: server.endpointUrl, security_mode: 'Sign', security_policy: 'Basic256Sha256', auth: 'username',
    username: 'operator', password: PASSWORD, publishing_interval_ms: 200, server_certificate_sha1: server.thumbprint, ...extra,
  });

  before(async () => {
    svc = await startService();
    admin = await svc.adminToken();
    // Made up front so queries answer [] rather than 404 before a collector's first write.
    assert.equal((await svc.post('/svcapi/create_collection', SCOPE, admin)).status, 200);
    const reader = await svc.newUser('reader@historian.test');
    const res = await svc.get('/svcapi/collectors/opcua/certificate', reader);
    assert.equal(res.status, 200, res.text);
    appPem = res.text;
    server = await startOpcuaServer({ users: { operator: PASSWORD }, allowAnonymous: false, securityModes: ['Sign', 'SignAndEncrypt'], securityPolicies: ['Basic256Sha256'], trustedClientPems: [appPem] });
  });

  after(async () => {
    await server?.dispose();
    if (svc) {
      assert.ok(!svc.logLines.join('\n').includes(PASSWORD), 'the password is in no log line');
      await svc.dispose();
    }
  });

  test('the application certificate is the service\'s own, kept under secrets/ with its key 0600', async () => {
    const x509 = new crypto.X509Certificate(appPem);
    assert.match(x509.subjectAltName!, /URI:urn:/);
    assert.ok(!appPem.includes('PRIVATE KEY'));
    const again = await svc.get('/svcapi/collectors/opcua/certificate', admin);
    assert.equal(again.text, appPem, 'the same certificate every time');
    const dir = path.join(svc.dataDir, 'secrets', 'opcua');
    const key = fs.readdirSync(dir).find((f) => f.includes('key'))!;
    assert.equal(fs.statSync(path.join(dir, key)).mode & 0o777, 0o600);
    assert.equal((await svc.get('/svcapi/collectors/opcua/certificate')).status, 401, 'a token is needed');
  });

  test('Sign + username with the right thumbprint: a browse root collects every numeric variable, with source timestamps, Bad values counted', async () => {
    const id = await create('plant', signed(), [
      { browse: 'ns=1;s=Plant', tag_prefix: 'plant/', sampling_interval_ms: 100 },
      { node_id: variableInfo(0).nodeId, tag: 'TI-100', sampling_interval_ms: 100 },
    ]);
    try {
      await waitFor(async () => (await status(id)).state === 'connected', 'connected', WAIT(30));
      // 1,000 generated variables, one Setpoint per line, and the explicit item (its variable is browsed too, under its path).
      assert.equal((await status(id)).items, 1011);
      await waitFor(async () => (await points('TI-100')).length >= 5, 'values of TI-100 stored', WAIT(20));
      const setpoint = await points('plant/Line03/Info/Setpoint');
      assert.deepEqual(setpoint, [[server.setpointTs, 45]], 'stored with the server\'s source timestamp');
      const tags = [...Array.from({ length: 1000 }, (_, i) => `plant/${variableInfo(i).path}`), ...Array.from({ length: 10 }, (_, l) => `plant/Line0${l}/Info/Setpoint`), 'plant/Line00/Label'];
      await waitFor(async () => {
        const res = await svc.post('/svcapi/lastlist', { ...SCOPE, tags }, admin);
        return Object.values(res.body as Record<string, unknown>).filter((v) => v !== null).length === 1010;
      }, 'a value of every numeric variable below the root', WAIT(30));
      const last = (await svc.post('/svcapi/lastlist', { ...SCOPE, tags: ['plant/Line00/Label'] }, admin)).body;
      assert.equal(last['plant/Line00/Label'], null, 'a String variable is not collected');
      await waitFor(async () => (await status(id)).values_skipped > 0, 'Bad values skipped and counted', WAIT(20));
      const s = await status(id);
      assert.ok(s.values_stored > 1010 && s.last_value_ms !== null, JSON.stringify(s));

      const saved = (await svc.get(`/svcapi/collectors/${id}`, admin)).body;
      assert.equal(saved.connection.password, '********');
      assert.equal(saved.connection.server_certificate_sha1, server.thumbprint);
      const everything = JSON.stringify([saved, (await svc.get('/svcapi/collectors', admin)).body, s]);
      assert.ok(!everything.includes(PASSWORD), 'the password is in no answer');
    } finally {
      await remove(id);
    }
  });

  test('without a thumbprint or with a wrong one the collector fails, quoting the thumbprint the server presented', async () => {
    const missing = await create('no thumbprint', signed({ server_certificate_sha1: undefined }), [{ node_id: variableInfo(0).nodeId, tag: 'x1' }]);
    const wrong = await create('wrong thumbprint', signed({ server_certificate_sha1: '0123456789'.repeat(4) }), [{ node_id: variableInfo(0).nodeId, tag: 'x2' }]);
    try {
      for (const id of [missing, wrong]) {
        await waitFor(async () => (await status(id)).state === 'failed', 'failed', WAIT(30));
        const s = await status(id);
        assert.ok(s.error!.includes(server.thumbprint), s.error);
        assert.equal(s.values_stored, 0);
      }
      assert.deepEqual(await points('x1'), []);
      assert.deepEqual(await points('x2'), []);
      // Copying the thumbprint from the error, as a person would, makes it connect.
      const quoted = /[0-9a-f]{40}/.exec((await status(missing)).error!)![0];
      const res = await svc.request('PUT', `/svcapi/collectors/${missing}`, { token: admin, body: { connection: signed({ server_certificate_sha1: quoted, password: '********' }) } });
      assert.equal(res.status, 200, res.text);
      await waitFor(async () => (await status(missing)).state === 'connected', 'connected with the copied thumbprint', WAIT(30));
    } finally {
      await remove(missing);
      await remove(wrong);
    }
  });

  test('a bad definition is 400 naming the field', async () => {
    const res = await svc.post('/svcapi/collectors', { name: 'bad', kind: 'opcua', enabled: true, ...SCOPE, connection: signed(), items: [{ node_id: 'ns=1;s=A', tag: 'a' }, { node_id: 'nonsense', tag: 'b' }] }, admin);
    assert.equal(res.status, 400);
    assert.match(res.text, /items\[1\]\.node_id/);
    const res2 = await svc.post('/svcapi/collectors', { name: 'bad', kind: 'opcua', enabled: true, ...SCOPE, connection: signed({ endpoint_url: 'http://x' }), items: [{ node_id: 'ns=1;s=A', tag: 'a' }] }, admin);
    assert.equal(res2.status, 400);
    assert.match(res2.text, /connection\.endpoint_url/);
    assert.ok(!res2.text.includes(PASSWORD));
  });

  test('a server restart: reconnecting, then connected; nothing stored for the outage, values after it', async () => {
    const own = await startOpcuaServer({ variables: 50, lines: 5, trustedClientPems: [appPem] });
    const id = await create('restart', { endpoint_url: own.endpointUrl, publishing_interval_ms: 100 }, [{ browse: 'ns=1;s=Plant', tag_prefix: 'r/', sampling_interval_ms: 50 }]);
    const tag = `r/${variableInfo(0, 50, 5).path}`;
    try {
      await waitFor(async () => (await points(tag)).length >= 10, 'first values', WAIT(30));
      const killedAt = Date.now();
      await own.stop('SIGKILL');
      await waitFor(async () => (await status(id)).state === 'reconnecting', 'reconnecting', WAIT(30));
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const restartedAt = Date.now();
      await own.start();
      await waitFor(async () => (await status(id)).state === 'connected', 'connected again', WAIT(60));
      await waitFor(async () => (await points(tag, restartedAt)).length >= 10, 'values after the restart', WAIT(30));
      for (let i = 0; i < 50; i++) {
        const inside = (await points(`r/${variableInfo(i, 50, 5).path}`, killedAt + 1)).filter(([ts]) => ts < restartedAt);
        assert.deepEqual(inside, [], `no point of variable ${i} inside the outage`);
      }
    } finally {
      await remove(id);
      await own.dispose();
    }
  });

  test('a network loss to a server that keeps history: the gap is back-filled', async () => {
    const hist = await startOpcuaServer({ variables: 20, lines: 2, historize: true, periodMs: 100, trustedClientPems: [appPem] });
    const proxy = await TcpProxy.start(hist.options.port);
    const endpoint = hist.endpointUrl.replace(`:${hist.options.port}/`, `:${proxy.port}/`);
    const id = await create('history', { endpoint_url: endpoint, publishing_interval_ms: 100 }, [{ browse: 'ns=1;s=Plant', tag_prefix: 'h/', sampling_interval_ms: 50 }]);
    const tag = `h/${variableInfo(0, 20, 2).path}`;
    try {
      await waitFor(async () => (await points(tag)).length >= 10, 'first values', WAIT(30));
      const cutAt = Date.now();
      proxy.cut();
      await waitFor(async () => (await status(id)).state === 'reconnecting', 'reconnecting', WAIT(30));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const restoredAt = Date.now();
      proxy.restore();
      await waitFor(async () => (await status(id)).state === 'connected', 'connected again', WAIT(60));
      // Variable 0 changes every 100 ms: about 30 changes in a 3 s outage, read back from the
      // server's history (fewer when a loaded machine slows the server's clock); the consecutive
      // counts below prove none is missing.
      await waitFor(async () => (await points(tag, cutAt + 500)).filter(([ts]) => ts < restoredAt - 500).length >= 5, 'the outage back-filled', WAIT(30));
      const all = await points(tag);
      const counts = all.map(([, v]) => v - 0.5);
      for (let k = 1; k < counts.length; k++) assert.equal(counts[k], counts[k - 1]! + 1, `consecutive changes at ${all[k]![0]}`);
    } finally {
      await remove(id);
      await proxy.stop();
      await hist.dispose();
    }
  });
  test('a service restart: the time the service was down is back-filled from the server history', async () => {
    const hist = await startOpcuaServer({ variables: 20, lines: 2, historize: true, periodMs: 100, trustedClientPems: [appPem] });
    const id = await create('resume', { endpoint_url: hist.endpointUrl, publishing_interval_ms: 100 }, [{ browse: 'ns=1;s=Plant', tag_prefix: 's/', sampling_interval_ms: 50 }]);
    const tag = `s/${variableInfo(0, 20, 2).path}`;
    try {
      await waitFor(async () => (await points(tag)).length >= 10, 'first values', WAIT(30));
      const dataDir = svc.dataDir;
      await svc.stop('SIGTERM');
      const stoppedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const restartedAt = Date.now();
      svc = await startService({ dataDir });
      admin = await svc.adminToken();
      await waitFor(async () => (await status(id)).state === 'connected', 'connected after the restart', WAIT(60));
      // Variable 0 changes every 100 ms: about 30 changes while the service was down, read back
      // from history (fewer on a loaded machine); the consecutive counts below prove none is missing.
      await waitFor(async () => (await points(tag, stoppedAt + 500)).filter(([ts]) => ts < restartedAt - 500).length >= 5, 'the downtime back-filled', WAIT(30));
      const all = await points(tag);
      const counts = all.map(([, v]) => v - 0.5);
      for (let k = 1; k < counts.length; k++) assert.equal(counts[k], counts[k - 1]! + 1, `consecutive changes at ${all[k]![0]}`);
    } finally {
      await remove(id);
      await hist.dispose();
    }
  });
});
