// The service always speaks TLS. Sites that have their own PKI configure
// tls.certFile/keyFile; everyone else gets a private CA generated on first
// start under <dataDir>/tls. Clients then trust ca.crt once, and the server
// certificate can be reissued later (new hostname, expiry) without clients
// having to trust anything new.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Forge from 'node-forge';

// node-forge is only needed when a certificate has to be made (first start,
// renewal); loading it on every start cost about 4 MiB of resident memory.
let forgeModule: typeof Forge | null = null;
function forge(): typeof Forge {
  forgeModule ??= createRequire(import.meta.url)('node-forge') as typeof Forge;
  return forgeModule;
}

export interface TlsFiles {
  keyFile: string;
  certFile: string;
  caFile: string | null;
}

export interface ConfiguredTls {
  certFile: string | null;
  keyFile: string | null;
  caFile: string | null;
}

interface InfoLogger {
  info(obj: object, msg?: string): void;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CA_VALIDITY_DAYS = 3650;
// Under Apple's 825-day ceiling for TLS server certificates.
const SERVER_VALIDITY_DAYS = 730;
// A reused server certificate this close to expiry is reissued from the CA.
const RENEW_BEFORE_DAYS = 30;
// Tolerates clients whose clocks run a little behind ours.
const BACKDATE_MS = 60 * 60 * 1000;

export function ensureCertificates(dataDir: string, configured: ConfiguredTls, log?: InfoLogger): TlsFiles {
  if (configured.certFile !== null || configured.keyFile !== null) {
    return checkConfiguredFiles(configured);
  }

  const dir = path.join(dataDir, 'tls');
  const files = {
    caCert: path.join(dir, 'ca.crt'),
    caKey: path.join(dir, 'ca.key'),
    serverCert: path.join(dir, 'server.crt'),
    serverKey: path.join(dir, 'server.key'),
  };
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone; the keys live here.
  fs.chmodSync(dir, 0o700);

  const hostname = os.hostname();
  let ca: Issuer | null = null;
  const caIsNew = !(fs.existsSync(files.caCert) && fs.existsSync(files.caKey));
  if (caIsNew) {
    const generated = createCa(hostname);
    // Key first: a crash in between leaves no ca.crt, so the next start
    // regenerates the pair instead of pairing a certificate with a missing key.
    writeAtomically(files.caKey, generated.keyPem, 0o600);
    writeAtomically(files.caCert, generated.certPem, 0o644);
    ca = generated;
  }

  const serverReason = caIsNew ? 'new CA' : serverCertificateProblem(files.serverCert, files.serverKey, files.caCert);
  if (serverReason !== null) {
    ca ??= {
      cert: forge().pki.certificateFromPem(fs.readFileSync(files.caCert, 'utf8')),
      key: forge().pki.privateKeyFromPem(fs.readFileSync(files.caKey, 'utf8')) as Forge.pki.rsa.PrivateKey,
    };
    const server = createServerCertificate(ca, hostname);
    writeAtomically(files.serverKey, server.keyPem, 0o600);
    writeAtomically(files.serverCert, server.certPem, 0o644);
    log?.info(
      { caFile: files.caCert, certFile: files.serverCert, keyFile: files.serverKey, caGenerated: caIsNew, reason: serverReason },
      caIsNew ? 'generated local TLS CA and server certificate' : 'generated TLS server certificate from existing local CA',
    );
  }

  return { keyFile: files.serverKey, certFile: files.serverCert, caFile: files.caCert };
}

/** The machine's name and the LAN address clients are most likely to reach. */
export function hostAddresses(): { hostname: string; lanAddress: string | null } {
  const candidates: string[] = [];
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) candidates.push(address.address);
    }
  }
  // Link-local (169.254/16) only counts when nothing better is configured.
  const lanAddress = candidates.find((a) => !a.startsWith('169.254.')) ?? candidates[0] ?? null;
  return { hostname: os.hostname(), lanAddress };
}

function checkConfiguredFiles(configured: ConfiguredTls): TlsFiles {
  if (configured.certFile === null) {
    throw new Error('tls.keyFile is set but tls.certFile is not; set both, or neither to use the generated local CA');
  }
  if (configured.keyFile === null) {
    throw new Error('tls.certFile is set but tls.keyFile is not; set both, or neither to use the generated local CA');
  }
  const settings: Array<[string, string | null]> = [
    ['tls.certFile', configured.certFile],
    ['tls.keyFile', configured.keyFile],
    ['tls.caFile', configured.caFile],
  ];
  for (const [setting, file] of settings) {
    if (file !== null && !fs.existsSync(file)) {
      throw new Error(`${setting} names a file that does not exist: ${file}`);
    }
  }
  return { certFile: configured.certFile, keyFile: configured.keyFile, caFile: configured.caFile };
}

/** Why the existing server certificate cannot be reused, or null if it can. */
function serverCertificateProblem(certFile: string, keyFile: string, caFile: string): string | null {
  if (!fs.existsSync(certFile) || !fs.existsSync(keyFile)) return 'missing';
  const cert = new crypto.X509Certificate(fs.readFileSync(certFile));
  // Someone may have replaced ca.crt/ca.key by hand; clients trusting it would reject the old leaf.
  if (!cert.verify(new crypto.X509Certificate(fs.readFileSync(caFile)).publicKey)) return 'not issued by current CA';
  // A crash between writing a new server.key and its server.crt leaves a mismatched pair.
  if (!cert.checkPrivateKey(crypto.createPrivateKey(fs.readFileSync(keyFile)))) return 'key does not match certificate';
  if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_DAYS * DAY_MS) return 'expiring';
  return null;
}

interface Issuer {
  cert: Forge.pki.Certificate;
  key: Forge.pki.rsa.PrivateKey;
}

interface GeneratedPair extends Issuer {
  certPem: string;
  keyPem: string;
}

/**
 * Generates with Node's native RSA (milliseconds) rather than forge's pure
 * JavaScript prime search (seconds), then hands the key to forge for signing.
 */
function generateRsaKey(): { keyPem: string; privateKey: Forge.pki.rsa.PrivateKey; publicKey: Forge.pki.rsa.PublicKey } {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const forgeKey = forge().pki.privateKeyFromPem(keyPem) as Forge.pki.rsa.PrivateKey;
  return { keyPem, privateKey: forgeKey, publicKey: forge().pki.setRsaPublicKey(forgeKey.n, forgeKey.e) };
}

/** 128 random bits; the first byte is kept in 1..127 so the DER integer is positive and minimal. */
function randomSerialNumber(): string {
  const bytes = crypto.randomBytes(16);
  bytes[0] = (bytes[0]! % 0x7f) + 1;
  return bytes.toString('hex');
}

function newCertificate(publicKey: Forge.pki.PublicKey, validityDays: number): Forge.pki.Certificate {
  const cert = forge().pki.createCertificate();
  cert.publicKey = publicKey;
  cert.serialNumber = randomSerialNumber();
  const now = Date.now();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + validityDays * DAY_MS);
  return cert;
}

function createCa(hostname: string): GeneratedPair {
  const { keyPem, privateKey, publicKey } = generateRsaKey();
  const cert = newCertificate(publicKey, CA_VALIDITY_DAYS);
  const subject = [
    { name: 'commonName', value: `Historian local CA ${hostname}` },
    { name: 'organizationName', value: 'Historian' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(privateKey, forge().md.sha256.create());
  return { cert, key: privateKey, certPem: forge().pki.certificateToPem(cert), keyPem };
}

function createServerCertificate(ca: Issuer, hostname: string): GeneratedPair {
  const { keyPem, privateKey, publicKey } = generateRsaKey();
  const cert = newCertificate(publicKey, SERVER_VALIDITY_DAYS);
  cert.setSubject([
    { name: 'commonName', value: hostname },
    { name: 'organizationName', value: 'Historian' },
  ]);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: serverAltNames(hostname) },
    { name: 'subjectKeyIdentifier' },
    // forge's `keyIdentifier: true` would take this certificate's own key, so pass the CA's.
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(ca.key, forge().md.sha256.create());
  return { cert, key: privateKey, certPem: forge().pki.certificateToPem(cert), keyPem };
}

const DNS_NAME = 2;
const IP_ADDRESS = 7;

function serverAltNames(hostname: string): Array<{ type: number; value?: string; ip?: string }> {
  const dnsNames = new Set(['localhost']);
  const host = hostname.toLowerCase();
  // Hostnames with characters outside DNS syntax would make the SAN invalid.
  if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) {
    dnsNames.add(host);
    // Clients that find the service over mDNS connect to <hostname>.local.
    if (!host.includes('.') && host !== 'localhost') dnsNames.add(`${host}.local`);
  }
  return [
    ...[...dnsNames].map((value) => ({ type: DNS_NAME, value })),
    { type: IP_ADDRESS, ip: '127.0.0.1' },
    { type: IP_ADDRESS, ip: '::1' },
  ];
}

/** Write to a temporary name and rename, so a crash never leaves half a file behind. */
function writeAtomically(file: string, contents: string, mode: number): void {
  const temporary = `${file}.${process.pid}.${crypto.randomBytes(4).toString('hex')}.tmp`;
  try {
    const fd = fs.openSync(temporary, 'wx', mode);
    try {
      fs.writeFileSync(fd, contents);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temporary, file);
  } catch (err) {
    fs.rmSync(temporary, { force: true });
    throw err;
  }
}
