// The OPC UA driver's checks of a definition (400s naming the field), its application certificate
// (made once, 0600, SAN URI), the thumbprint trust and the value conversion, without a server.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { badRequest, forbidden, ServiceError } from '../../shared/errors.js';
import { ensureAppCertificate, opcuaApplicationCertificatePem } from '../../src/collectors/opcua/app-certificate.js';
import { validNodeId } from '../../src/collectors/opcua/config.js';
import { opcuaDriver } from '../../src/collectors/opcua/driver.js';
import { firstDer, leafThumbprint } from '../../src/collectors/opcua/trust.js';
import { ValueBatcher } from '../../src/collectors/opcua/batcher.js';
import { RecordingSink } from '../support/recording-sink.js';
import { waitFor } from '../support/wait-for.js';

const OK = { endpoint_url: 'opc.tcp://plc.example:4840/UA/Server', security_mode: 'None', auth: 'anonymous' };
const ITEMS = [{ node_id: 'ns=2;s=Boiler.Temp', tag: 'boiler/temp' }];

function rejects(connection: Record<string, unknown>, items: Array<Record<string, unknown>>, field: RegExp): void {
  assert.throws(() => opcuaDriver.validate(connection, items), (err: unknown) => {
    assert.ok(err instanceof ServiceError, String(err));
    assert.equal(err.status, 400);
    assert.match(err.message, field);
    return true;
  });
}

test('a good definition passes; secrets are password and private_key_pem', () => {
  opcuaDriver.validate(OK, ITEMS);
  opcuaDriver.validate({ ...OK, security_mode: 'Sign', security_policy: 'Basic256Sha256', auth: 'username', username: 'u', password: 'p', server_certificate_sha1: 'AB:'.repeat(19) + 'AB', publishing_interval_ms: 500, keep_uncertain: true }, [
    { node_id: 'i=2258', tag: 't', sampling_interval_ms: 100, deadband_abs: 0.5 },
    { browse: 'ns=2;s=Plant', tag_prefix: '' },
    { browse: 'ns=3;i=1000', tag_prefix: 'area1/', sampling_interval_ms: 1000 },
  ]);
  opcuaDriver.validate({ ...OK, security_mode: 'SignAndEncrypt', security_policy: 'http://opcfoundation.org/UA/SecurityPolicy#Aes256_Sha256_RsaPss' }, ITEMS);
  assert.deepEqual([...opcuaDriver.secretFields].sort(), ['password', 'private_key_pem']);
  assert.equal(opcuaDriver.kind, 'opcua');
});

test('bad connections are refused naming the field', () => {
  rejects({ ...OK, endpoint_url: 'http://plc:4840' }, ITEMS, /connection\.endpoint_url/);
  rejects({ ...OK, endpoint_url: 'opc.tcp://' }, ITEMS, /connection\.endpoint_url/);
  rejects({ ...OK, endpoint_url: 'opc.tcp://user:pw@plc:4840' }, ITEMS, /connection\.endpoint_url/);
  rejects({ ...OK, security_mode: 'Encrypt' }, ITEMS, /connection\.security_mode/);
  rejects({ ...OK, security_mode: 'Sign', security_policy: 'Basic128Rsa15' }, ITEMS, /connection\.security_policy/);
  rejects({ ...OK, security_mode: 'Sign', security_policy: 'None' }, ITEMS, /connection\.security_policy/);
  rejects({ ...OK, auth: 'kerberos' }, ITEMS, /connection\.auth/);
  rejects({ ...OK, auth: 'username', password: 'p' }, ITEMS, /connection\.username/);
  rejects({ ...OK, auth: 'username', username: 'u' }, ITEMS, /connection\.password/);
  rejects({ ...OK, auth: 'certificate', security_mode: 'Sign' }, ITEMS, /connection\.certificate_pem/);
  rejects({ ...OK, auth: 'certificate' }, ITEMS, /security_mode/);
  rejects({ ...OK, publishing_interval_ms: 0 }, ITEMS, /connection\.publishing_interval_ms/);
  rejects({ ...OK, publishing_interval_ms: 1.5 }, ITEMS, /connection\.publishing_interval_ms/);
  rejects({ ...OK, server_certificate_sha1: 'abc' }, ITEMS, /connection\.server_certificate_sha1/);
  rejects({ ...OK, keep_uncertain: 'yes' }, ITEMS, /connection\.keep_uncertain/);
  rejects({ ...OK, endpoint: 'x' }, ITEMS, /connection\.endpoint is not a field/);
});

test('a user certificate must parse and match its key; the key is never quoted', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-cfg-'));
  const a = ensureAppCertificate(path.join(dir, 'a'));
  const b = ensureAppCertificate(path.join(dir, 'b'));
  const keyB = fs.readFileSync(b.keyFile, 'utf8');
  const base = { ...OK, security_mode: 'Sign', auth: 'certificate' };
  opcuaDriver.validate({ ...base, certificate_pem: a.certPem, private_key_pem: fs.readFileSync(a.keyFile, 'utf8') }, ITEMS);
  rejects({ ...base, certificate_pem: a.certPem, private_key_pem: keyB }, ITEMS, /connection\.private_key_pem does not belong/);
  rejects({ ...base, certificate_pem: 'junk', private_key_pem: keyB }, ITEMS, /connection\.certificate_pem/);
  try {
    opcuaDriver.validate({ ...base, certificate_pem: a.certPem, private_key_pem: keyB }, ITEMS);
  } catch (err) {
    assert.ok(!String((err as Error).message).includes('PRIVATE KEY'));
  }
});

test('bad items are refused naming the item', () => {
  rejects(OK, [], /items must be a non-empty array/);
  rejects(OK, [...ITEMS, { node_id: 'Boiler.Temp', tag: 'x' }], /items\[1\]\.node_id/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;i=abc', tag: 'x' }], /items\[1\]\.node_id/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;s=X', tag: '' }], /items\[1\]\.tag/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;s=X', tag: 'boiler/temp' }], /items\[1\]\.tag .* items\[0\]/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;s=X', tag: 'x', sampling_interval_ms: -5 }], /items\[1\]\.sampling_interval_ms/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;s=X', tag: 'x', deadband_abs: -1 }], /items\[1\]\.deadband_abs/);
  rejects(OK, [...ITEMS, { browse: 'Plant', tag_prefix: 'p/' }], /items\[1\]\.browse/);
  rejects(OK, [...ITEMS, { browse: 'ns=2;s=Plant' }], /items\[1\]\.tag_prefix/);
  rejects(OK, [...ITEMS, { node_id: 'ns=2;s=X', tag: 'x', topic: 'a' }], /items\[1\]\.topic is not a field/);
  rejects(OK, [null as unknown as Record<string, unknown>], /items\[0\] must be an object/);
});

test('NodeId text forms', () => {
  for (const ok of ['i=85', 'ns=0;i=2258', 'ns=2;s=Boiler.Temp', 'ns=2;s=a;b=c', 'ns=1;g=09087e75-8e5e-499b-954f-f2a9603db28a', 'ns=1;b=M/RbKBsRVkePCePcx24oRA==', 'nsu=urn:plant;s=X']) {
    assert.ok(validNodeId(ok), ok);
  }
  for (const bad of ['', 'Boiler', 'ns=70000;i=1', 'ns=1;i=4294967296', 'ns=1;g=nope', 'ns=1;x=1', 's=']) assert.ok(!validNodeId(bad), bad);
});

test('the application certificate is made once, 0600, with the application URI in its SAN', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-app-'));
  const first = ensureAppCertificate(dir, 'historian-host');
  const again = ensureAppCertificate(dir, 'another-name');
  assert.equal(again.certPem, first.certPem, 'kept, not made again');
  assert.equal(first.applicationUri, 'urn:historian-host:historian');
  assert.equal(again.applicationUri, first.applicationUri, 'the URI is read from the certificate');
  assert.equal(fs.statSync(first.keyFile).mode & 0o777, 0o600);
  assert.equal(fs.statSync(first.certFile).mode & 0o777, 0o600);
  assert.ok(first.keyFile.startsWith(path.join(dir, 'opcua')));
  const x509 = new crypto.X509Certificate(first.certPem);
  assert.match(x509.subjectAltName!, /URI:urn:historian-host:historian/);
  assert.ok(x509.checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(first.keyFile))));
  assert.equal((x509.publicKey.asymmetricKeyDetails?.modulusLength), 2048);
  assert.equal(first.thumbprint, crypto.createHash('sha1').update(x509.raw).digest('hex'));
  assert.equal(opcuaApplicationCertificatePem(dir), first.certPem);
  assert.ok(!opcuaApplicationCertificatePem(dir).includes('PRIVATE'));
});

test('the thumbprint is the leaf\'s in a chain', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-chain-'));
  const a = new crypto.X509Certificate(ensureAppCertificate(path.join(dir, 'a')).certPem).raw;
  const b = new crypto.X509Certificate(ensureAppCertificate(path.join(dir, 'b')).certPem).raw;
  const chain = Buffer.concat([a, b]);
  assert.deepEqual(firstDer(chain), a);
  assert.equal(leafThumbprint(chain), crypto.createHash('sha1').update(a).digest('hex'));
});

test('the batcher gathers values into few writes, keeps order and retries a refused batch', async () => {
  const rec = new RecordingSink();
  let writes = 0;
  const write = rec.sink.write;
  rec.sink.write = async (values, options) => {
    writes++;
    return write(values, options);
  };
  const batcher = new ValueBatcher(rec.sink);
  for (let i = 0; i < 12_000; i++) batcher.add({ tag: 't', ts: i, value: i });
  batcher.skip('bad status', 3);
  batcher.flush();
  await batcher.idle();
  assert.equal(rec.values.length, 12_000);
  assert.ok(writes <= 3, `${writes} writes`);
  assert.deepEqual(rec.values.map((v) => v.ts), Array.from({ length: 12_000 }, (_, i) => i));
  assert.equal(rec.skipped.get('bad status'), 3);

  rec.refuse = new Error('buffer full');
  batcher.add({ tag: 't', ts: 20_000, value: 1 });
  batcher.addBackfill([{ tag: 't', ts: 15_000, value: 2 }]);
  batcher.flush();
  await new Promise((resolve) => setTimeout(resolve, 300));
  rec.refuse = null;
  await waitFor(() => rec.backfill.length === 1 && rec.values.length === 12_001, 'refused batches written once storage takes them', { timeoutMs: 5000 });
  batcher.close();
});

test('values storage refuses for good are found by halving, dropped and counted; the rest are stored', async () => {
  const rec = new RecordingSink();
  rec.refuseWhen = (values) => (values.some((v) => v.tag === 'owned-elsewhere') ? badRequest('DUPLICATE: tag "owned-elsewhere" belongs to another collection') : null);
  const batcher = new ValueBatcher(rec.sink);
  for (let i = 0; i < 1000; i++) batcher.add({ tag: i % 100 === 7 ? 'owned-elsewhere' : `t${i % 5}`, ts: 1e12 + i, value: i });
  batcher.flush();
  await batcher.idle();
  assert.equal(rec.values.length, 990);
  assert.equal(rec.skipped.get('refused by storage'), 10);
  // After three refusals one by one the tag is skipped without a write.
  const writes = rec.writes;
  for (let i = 0; i < 50; i++) batcher.add({ tag: 'owned-elsewhere', ts: 2e12 + i, value: i });
  batcher.add({ tag: 'fine', ts: 2e12, value: 1 });
  batcher.flush();
  await batcher.idle();
  assert.equal(rec.writes, writes + 1);
  assert.equal(rec.skipped.get('refused by storage'), 60);
  assert.ok(rec.logLines.some((l) => l.includes('skipped from now on')));

  // A refusal that is not about the values (the owner's grant gone): the batch is dropped, not halved.
  rec.refuseWhen = () => forbidden('the account that saved this collector no longer exists');
  const before = rec.writes;
  for (let i = 0; i < 100; i++) batcher.add({ tag: 'x', ts: 3e12 + i, value: i });
  batcher.flush();
  await batcher.idle();
  assert.equal(rec.writes, before + 1);
  assert.equal(rec.skipped.get('refused by storage'), 160);
  batcher.close();
});
