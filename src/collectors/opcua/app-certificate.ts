// The service's own OPC UA application instance certificate: one per data dir, made on first use
// under <secretsDir>/opcua/ and kept (a server's administrator trusts it once, by putting the PEM
// served at GET /svcapi/collectors/opcua/certificate into the server's trust list). OPC UA wants
// the application URI in the certificate's subjectAltName and the same URI in the session, so the
// URI is read back from the certificate rather than recomputed (the host name may change later).

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import type Forge from 'node-forge';

export interface AppCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
  /** The SAN URI, passed as the client's applicationUri. */
  applicationUri: string;
  /** Hex SHA-1 of the DER, as OPC UA servers show it in their trust lists. */
  thumbprint: string;
}

const VALIDITY_DAYS = 3650;
const DAY_MS = 86_400_000;
/** Starts a day back so a server whose clock is a little behind does not see a certificate "not yet valid". */
const BACKDATE_MS = DAY_MS;

export function appCertificateFiles(secretsDir: string): { dir: string; certFile: string; keyFile: string } {
  const dir = path.join(secretsDir, 'opcua');
  return { dir, certFile: path.join(dir, 'application-cert.pem'), keyFile: path.join(dir, 'application-key.pem') };
}

/** The certificate, made when missing. Synchronous: RSA 2048 from Node's native generator takes milliseconds. */
export function ensureAppCertificate(secretsDir: string, hostname = os.hostname()): AppCertificate {
  const files = appCertificateFiles(secretsDir);
  if (!fs.existsSync(files.certFile) || !fs.existsSync(files.keyFile)) {
    fs.mkdirSync(files.dir, { recursive: true, mode: 0o700 });
    const made = makeCertificate(hostname);
    // The key first: a certificate without its key would be kept and never usable.
    writeAtomically(files.keyFile, made.keyPem, 0o600);
    writeAtomically(files.certFile, made.certPem, 0o600);
  }
  const certPem = fs.readFileSync(files.certFile, 'utf8');
  const x509 = new crypto.X509Certificate(certPem);
  return {
    certFile: files.certFile,
    keyFile: files.keyFile,
    certPem,
    applicationUri: sanUri(x509) ?? applicationUriFor(hostname),
    thumbprint: crypto.createHash('sha1').update(x509.raw).digest('hex'),
  };
}

/** The PEM for the server's trust list (GET /svcapi/collectors/opcua/certificate); made when missing. */
export function opcuaApplicationCertificatePem(secretsDir: string): string {
  return ensureAppCertificate(secretsDir).certPem;
}

export function applicationUriFor(hostname: string): string {
  return `urn:${hostname}:historian`;
}

function sanUri(x509: crypto.X509Certificate): string | null {
  const match = /(?:^|,\s*)URI:([^,]+)/.exec(x509.subjectAltName ?? '');
  return match ? match[1]!.trim() : null;
}

function makeCertificate(hostname: string): { certPem: string; keyPem: string } {
  const forge = createRequire(import.meta.url)('node-forge') as typeof Forge;
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const key = forge.pki.privateKeyFromPem(keyPem) as Forge.pki.rsa.PrivateKey;
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.setRsaPublicKey(key.n, key.e);
  const serial = crypto.randomBytes(16);
  serial[0] = (serial[0]! % 0x7f) + 1;
  cert.serialNumber = serial.toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + VALIDITY_DAYS * DAY_MS);
  const subject = [
    { name: 'commonName', value: `Historian@${hostname}` },
    { name: 'organizationName', value: 'Historian' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  // OPC UA Part 6 6.2.2: a self-signed application certificate carries these usages; servers
  // (node-opcua's among them) check them before trusting it.
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, nonRepudiation: true, keyEncipherment: true, dataEncipherment: true, keyCertSign: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    { name: 'subjectAltName', altNames: [{ type: 6, value: applicationUriFor(hostname) }, { type: 2, value: hostname }] },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: cert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(key, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem };
}

function writeAtomically(file: string, contents: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, contents, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}
