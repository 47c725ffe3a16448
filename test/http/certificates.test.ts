import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { once } from 'node:events';
import forge from 'node-forge';
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

/** The names of a certificate's subjectAltName as Node prints them ("DNS:x", "IP Address:y"), sorted. */
function altNames(cert: crypto.X509Certificate): string[] {
  return (cert.subjectAltName ?? '').split(', ').filter(Boolean).sort();
}

/** Normalises an IPv6 address the way Node prints it in subjectAltName (0:0:0:0:0:0:0:1). */
function expandIp(bytes: string): string {
  if (bytes.length === 4) return [...bytes].map((c) => c.charCodeAt(0)).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes.charCodeAt(i) << 8) | bytes.charCodeAt(i + 1)).toString(16).toUpperCase());
  return groups.join(':');
}

/** Signs a leaf with the data dir's CA key, for names of our choosing (what a thief of ca.key could do). */
function signLeaf(dataDir: string, altNames: Array<{ type: number; value?: string; ip?: string }>): { key: string; cert: string } {
  const caCert = forge.pki.certificateFromPem(fs.readFileSync(path.join(dataDir, 'tls', 'ca.crt'), 'utf8'));
  const caKey = forge.pki.privateKeyFromPem(fs.readFileSync(path.join(dataDir, 'tls', 'ca.key'), 'utf8'));
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const leafKey = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(leafKey.n, leafKey.e);
  cert.serialNumber = '01' + crypto.randomBytes(8).toString('hex');
  cert.validity.notBefore = new Date(Date.now() - 3_600_000);
  cert.validity.notAfter = new Date(Date.now() + 86_400_000);
  cert.setSubject([{ name: 'commonName', value: altNames[0]!.value ?? altNames[0]!.ip! }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames },
  ]);
  cert.sign(caKey, forge.md.sha256.create());
  return { key: keyPem, cert: forge.pki.certificateToPem(cert) };
}

/** Serves `pair` over TLS and connects as a client trusting only ca.crt; why the client refused it, or null when trusted. */
async function handshake(caFile: string, pair: { key: string; cert: string }, servername: string): Promise<string | null> {
  const server = tls.createServer({ key: pair.key, cert: pair.cert }, (socket) => socket.end('hello'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as { port: number };
    const client = tls.connect({ host: '127.0.0.1', port, servername, ca: [fs.readFileSync(caFile, 'utf8')] });
    // once() rejects on 'error', which is how a refused certificate shows up.
    const outcome = await once(client, 'secureConnect').then(
      () => (client.authorized ? null : String(client.authorizationError)),
      // Node's code for this OpenSSL error is UNSPECIFIED; the message names it.
      (err: Error) => err.message,
    );
    client.destroy();
    return outcome;
  } finally {
    server.close();
  }
}

const DNS = 2;
const IP = 7;

test('the local CA is name-constrained (critical) to exactly the names of its server certificate', (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const files = ensureCertificates(dataDir, NOT_CONFIGURED, undefined, 'plant-7');

  const ca = forge.pki.certificateFromPem(fs.readFileSync(files.caFile!, 'utf8'));
  const extension = ca.extensions.find((e: { id: string }) => e.id === '2.5.29.30') as
    | { critical?: boolean; permittedSubtrees?: Array<{ type: number; value: string }>; excludedSubtrees?: unknown[] }
    | undefined;
  assert.ok(extension, 'the CA has a nameConstraints extension');
  assert.equal(extension.critical, true);
  assert.deepEqual(extension.excludedSubtrees, []);
  const permitted = extension.permittedSubtrees!.map((s) => {
    if (s.type === DNS) return `DNS:${s.value}`;
    assert.equal(s.type, IP, `subtree type ${s.type}`);
    const half = s.value.length / 2;
    assert.equal(s.value.slice(half), '\xff'.repeat(half), 'an IP subtree is one address (all-ones mask)');
    return `IP Address:${expandIp(s.value.slice(0, half))}`;
  });

  const server = readCert(files.certFile);
  assert.deepEqual(permitted.sort(), altNames(server));
  assert.deepEqual(altNames(server), ['DNS:localhost', 'DNS:plant-7', 'DNS:plant-7.local', 'IP Address:0:0:0:0:0:0:0:1', 'IP Address:127.0.0.1']);
  assert.ok(server.verify(readCert(files.caFile!).publicKey));
});

test('a TLS client trusting the local CA accepts its own names and refuses any other name the CA key signs', async (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const files = ensureCertificates(dataDir, NOT_CONFIGURED);

  // The server certificate and a leaf for a permitted name pass, so a refusal below is the constraint at work.
  const serverPair = { key: fs.readFileSync(files.keyFile, 'utf8'), cert: fs.readFileSync(files.certFile, 'utf8') };
  assert.equal(await handshake(files.caFile!, serverPair, 'localhost'), null);
  assert.equal(await handshake(files.caFile!, signLeaf(dataDir, [{ type: DNS, value: 'localhost' }]), 'localhost'), null);

  const foreign: Array<[string, Array<{ type: number; value?: string; ip?: string }>, string]> = [
    ['a foreign DNS name', [{ type: DNS, value: 'example.com' }], 'example.com'],
    ['a foreign name beside a permitted one', [{ type: DNS, value: 'localhost' }, { type: DNS, value: 'example.com' }], 'example.com'],
    ['a name that only ends like a permitted one', [{ type: DNS, value: 'evillocalhost' }], 'evillocalhost'],
    ['a foreign IP address', [{ type: DNS, value: 'localhost' }, { type: IP, ip: '10.1.2.3' }], 'localhost'],
  ];
  for (const [what, names, servername] of foreign) {
    const outcome = await handshake(files.caFile!, signLeaf(dataDir, names), servername);
    assert.equal(outcome, 'permitted subtree violation', what);
  }
});

test('reissuing from a CA made for another host name leaves the new name out and says so', async (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const first = ensureCertificates(dataDir, NOT_CONFIGURED, undefined, 'plant-a');
  const caBefore = fs.readFileSync(first.caFile!, 'utf8');
  fs.rmSync(first.certFile);

  const warnings: Array<{ obj: object; msg?: string }> = [];
  const logger = { info: () => {}, warn: (obj: object, msg?: string) => warnings.push({ obj, msg }) };
  const files = ensureCertificates(dataDir, NOT_CONFIGURED, logger, 'plant-b');

  assert.equal(fs.readFileSync(files.caFile!, 'utf8'), caBefore, 'the CA is kept');
  assert.deepEqual(altNames(readCert(files.certFile)), ['DNS:localhost', 'IP Address:0:0:0:0:0:0:0:1', 'IP Address:127.0.0.1']);
  assert.equal(warnings.length, 1);
  assert.deepEqual((warnings[0]!.obj as { names: string[] }).names, ['plant-b', 'plant-b.local']);
  assert.match(warnings[0]!.msg!, /delete the tls folder/);
  const pair = { key: fs.readFileSync(files.keyFile, 'utf8'), cert: fs.readFileSync(files.certFile, 'utf8') };
  assert.equal(await handshake(files.caFile!, pair, 'localhost'), null, 'the reissued certificate is still trusted');
});

test('an existing CA without name constraints is kept, with a warning that says how to replace it', (t) => {
  const dataDir = tempDir();
  t.after(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  // A CA as earlier versions made it: no nameConstraints extension.
  const tlsDir = path.join(dataDir, 'tls');
  fs.mkdirSync(tlsDir, { mode: 0o700 });
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const key = forge.pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const ca = forge.pki.createCertificate();
  ca.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  ca.serialNumber = '01';
  ca.validity.notBefore = new Date(Date.now() - 3_600_000);
  ca.validity.notAfter = new Date(Date.now() + 365 * 86_400_000);
  ca.setSubject([{ name: 'commonName', value: 'Historian local CA (old)' }]);
  ca.setIssuer([{ name: 'commonName', value: 'Historian local CA (old)' }]);
  ca.setExtensions([{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, critical: true }]);
  ca.sign(key, forge.md.sha256.create());
  const caPem = forge.pki.certificateToPem(ca);
  fs.writeFileSync(path.join(tlsDir, 'ca.crt'), caPem);
  fs.writeFileSync(path.join(tlsDir, 'ca.key'), keyPem, { mode: 0o600 });

  const warnings: Array<{ obj: object; msg?: string }> = [];
  const files = ensureCertificates(dataDir, NOT_CONFIGURED, { info: () => {}, warn: (obj, msg) => warnings.push({ obj, msg }) });
  assert.equal(fs.readFileSync(files.caFile!, 'utf8'), caPem, 'the old CA is not replaced silently');
  assert.ok(readCert(files.certFile).verify(readCert(files.caFile!).publicKey));
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!.msg!, /no name constraints/);
  assert.match(warnings[0]!.msg!, /delete the tls folder/);

  // A constrained CA gives no such warning on later starts.
  const fresh = tempDir();
  t.after(() => fs.rmSync(fresh, { recursive: true, force: true }));
  ensureCertificates(fresh, NOT_CONFIGURED);
  const later: unknown[] = [];
  ensureCertificates(fresh, NOT_CONFIGURED, { info: () => {}, warn: (obj) => later.push(obj) });
  assert.deepEqual(later, []);
});
