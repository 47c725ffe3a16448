import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { once } from 'node:events';
import { ensureCertificates, hostAddresses } from '../../src/http/certificates.js';

const NOT_CONFIGURED = { certFile: null, keyFile: null, caFile: null };

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'historian-tls-'));
}

function readCert(file: string): crypto.X509Certificate {
  return new crypto.X509Certificate(fs.readFileSync(file));
}

function mode(file: string): number {
  return fs.statSync(file).mode & 0o777;
}

test('first start generates a local CA and a server certificate it signed', (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const logged: Array<{ obj: object; msg?: string }> = [];

  const files = ensureCertificates(dataDir, NOT_CONFIGURED, { info: (obj, msg) => logged.push({ obj, msg }) });

  const tlsDir = path.join(dataDir, 'tls');
  assert.deepEqual(files, {
    keyFile: path.join(tlsDir, 'server.key'),
    certFile: path.join(tlsDir, 'server.crt'),
    caFile: path.join(tlsDir, 'ca.crt'),
  });
  assert.deepEqual(fs.readdirSync(tlsDir).sort(), ['ca.crt', 'ca.key', 'server.crt', 'server.key']);
  assert.equal(mode(path.join(tlsDir, 'ca.key')), 0o600);
  assert.equal(mode(files.keyFile), 0o600);
  assert.equal(mode(tlsDir), 0o700);
  assert.equal(logged.length, 1);

  const ca = readCert(files.caFile!);
  const server = readCert(files.certFile);
  assert.equal(ca.ca, true);
  assert.equal(server.ca, false);
  assert.match(ca.subject, new RegExp(`CN=Historian local CA ${os.hostname()}`));
  assert.ok(ca.verify(ca.publicKey), 'the CA is self-signed');
  assert.ok(server.verify(ca.publicKey), 'the server certificate is signed by the CA');
  assert.ok(server.checkIssued(ca));
  assert.equal(server.checkHost('localhost'), 'localhost');
  assert.equal(server.checkIP('127.0.0.1'), '127.0.0.1');
  assert.equal(server.checkIP('::1'), '::1');
  assert.ok(server.keyUsage?.includes('1.3.6.1.5.5.7.3.1'), 'serverAuth extended key usage');
  assert.ok(server.checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(files.keyFile))));

  const validDays = (Date.parse(server.validTo) - Date.now()) / 86_400_000;
  assert.ok(validDays > 700 && validDays < 825, `server certificate valid for ${validDays} days`);
  const caValidYears = (Date.parse(ca.validTo) - Date.now()) / (365 * 86_400_000);
  assert.ok(caValidYears > 9.9, `CA valid for ${caValidYears} years`);
  assert.ok(BigInt(`0x${server.serialNumber}`) > 0n);
  assert.notEqual(server.serialNumber, ca.serialNumber);
});

test('a restart reuses existing files, and reissues only a missing or mismatched server pair', (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const first = ensureCertificates(dataDir, NOT_CONFIGURED);
  const snapshot = (files: typeof first) =>
    [files.caFile!, path.join(dataDir, 'tls', 'ca.key'), files.certFile, files.keyFile].map((f) => fs.readFileSync(f, 'utf8'));
  const before = snapshot(first);

  let logCalls = 0;
  const second = ensureCertificates(dataDir, NOT_CONFIGURED, { info: () => logCalls++ });
  assert.deepEqual(second, first);
  assert.deepEqual(snapshot(second), before);
  assert.equal(logCalls, 0);

  // A key that does not belong to the certificate (a crash mid-reissue) forces a new pair.
  fs.copyFileSync(path.join(dataDir, 'tls', 'ca.key'), first.keyFile);
  ensureCertificates(dataDir, NOT_CONFIGURED, { info: () => logCalls++ });
  assert.equal(logCalls, 1);
  assert.ok(readCert(first.certFile).checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(first.keyFile))));

  fs.rmSync(first.certFile);
  fs.rmSync(first.keyFile);
  const third = ensureCertificates(dataDir, NOT_CONFIGURED, { info: () => logCalls++ });
  const after = snapshot(third);
  assert.equal(logCalls, 2);
  assert.equal(after[0], before[0], 'CA certificate kept');
  assert.equal(after[1], before[1], 'CA key kept');
  assert.notEqual(after[2], before[2], 'new server certificate');
  assert.ok(readCert(third.certFile).verify(readCert(third.caFile!).publicKey));
  assert.deepEqual(fs.readdirSync(path.join(dataDir, 'tls')).sort(), ['ca.crt', 'ca.key', 'server.crt', 'server.key']);
});

test('a server certificate not issued by the current CA is reissued', (t) => {
  const dataDir = tempDir();
  const otherDir = tempDir();
  t.after(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(otherDir, { recursive: true, force: true });
  });
  const files = ensureCertificates(dataDir, NOT_CONFIGURED);
  const other = ensureCertificates(otherDir, NOT_CONFIGURED);
  // Simulate an operator swapping in a different CA by hand.
  fs.copyFileSync(other.caFile!, files.caFile!);
  fs.copyFileSync(path.join(otherDir, 'tls', 'ca.key'), path.join(dataDir, 'tls', 'ca.key'));
  assert.equal(readCert(files.certFile).verify(readCert(files.caFile!).publicKey), false);

  ensureCertificates(dataDir, NOT_CONFIGURED);
  assert.ok(readCert(files.certFile).verify(readCert(files.caFile!).publicKey));
});

test('configured certificate files are returned as they are', (t) => {
  const dir = tempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const certFile = path.join(dir, 'site.crt');
  const keyFile = path.join(dir, 'site.key');
  const caFile = path.join(dir, 'site-ca.crt');
  for (const file of [certFile, keyFile, caFile]) fs.writeFileSync(file, 'placeholder');

  assert.deepEqual(ensureCertificates(dir, { certFile, keyFile, caFile: null }), { certFile, keyFile, caFile: null });
  assert.deepEqual(ensureCertificates(dir, { certFile, keyFile, caFile }), { certFile, keyFile, caFile });
  assert.equal(fs.existsSync(path.join(dir, 'tls')), false, 'nothing is generated');
});

test('incomplete or wrong configuration names the setting', (t) => {
  const dir = tempDir();
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const existing = path.join(dir, 'exists.pem');
  fs.writeFileSync(existing, 'placeholder');
  const missing = path.join(dir, 'missing.pem');

  assert.throws(() => ensureCertificates(dir, { certFile: existing, keyFile: null, caFile: null }), /tls\.keyFile/);
  assert.throws(() => ensureCertificates(dir, { certFile: null, keyFile: existing, caFile: null }), /tls\.certFile/);
  assert.throws(
    () => ensureCertificates(dir, { certFile: missing, keyFile: existing, caFile: null }),
    (err: Error) => err.message.includes('tls.certFile') && err.message.includes(missing),
  );
  assert.throws(
    () => ensureCertificates(dir, { certFile: existing, keyFile: existing, caFile: missing }),
    (err: Error) => err.message.includes('tls.caFile') && err.message.includes(missing),
  );
});

test('a TLS client that trusts only ca.crt completes an authorized handshake', async (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const files = ensureCertificates(dataDir, NOT_CONFIGURED);

  const server = tls.createServer(
    { key: fs.readFileSync(files.keyFile), cert: fs.readFileSync(files.certFile) },
    (socket) => socket.end('hello'),
  );
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const { port } = server.address() as { port: number };

  for (const servername of ['localhost', undefined]) {
    const client = tls.connect({
      host: '127.0.0.1',
      port,
      ca: [fs.readFileSync(files.caFile!, 'utf8')],
      ...(servername === undefined ? {} : { servername }),
    });
    await once(client, 'secureConnect');
    assert.equal(client.authorized, true, String(client.authorizationError));
    const [reply] = await once(client, 'data');
    assert.equal(String(reply), 'hello');
    client.destroy();
  }

  // A client trusting some other CA must refuse the same server.
  const otherDir = tempDir();
  t.after(() => fs.rmSync(otherDir, { recursive: true, force: true }));
  const other = ensureCertificates(otherDir, NOT_CONFIGURED);
  const stranger = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: [fs.readFileSync(other.caFile!)] });
  const [err] = await once(stranger, 'error');
  assert.match(String((err as NodeJS.ErrnoException).code), /UNABLE_TO_VERIFY|SELF_SIGNED|CERT/);
});

test('hostAddresses reports the hostname and a non-internal IPv4 address or null', () => {
  const { hostname, lanAddress } = hostAddresses();
  assert.equal(hostname, os.hostname());
  if (lanAddress !== null) {
    assert.match(lanAddress, /^\d+\.\d+\.\d+\.\d+$/);
    assert.notEqual(lanAddress, '127.0.0.1');
  }
});
