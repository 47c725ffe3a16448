// The service always speaks TLS. Sites that have their own PKI configure
// tls.certFile/keyFile; everyone else gets a private CA generated on first
// start under <dataDir>/tls. Clients then trust ca.crt once, and the server
// certificate can be reissued later (expiry, lost key) without clients
// having to trust anything new.
//
// The CA carries critical X.509 name constraints permitting only the names of
// its server certificate (localhost, the host name, <host>.local, 127.0.0.1,
// ::1), so a client that trusts it does not trust it for any other site even
// if ca.key leaks.

import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import type Forge from 'node-forge';
import { StartupError } from '../startup.js';

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

interface CertificateLogger {
  info(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CA_VALIDITY_DAYS = 3650;
// Under Apple's 825-day ceiling for TLS server certificates.
const SERVER_VALIDITY_DAYS = 730;
// A reused server certificate this close to expiry is reissued from the CA.
const RENEW_BEFORE_DAYS = 30;
// Tolerates clients whose clocks run a little behind ours.
const BACKDATE_MS = 60 * 60 * 1000;

/** `hostname` is the machine's name unless a test passes another. */
export function ensureCertificates(dataDir: string, configured: ConfiguredTls, log?: CertificateLogger, hostname = os.hostname()): TlsFiles {
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

  const names = localNames(hostname);
  let ca: Issuer | null = null;
  const caIsNew = !(fs.existsSync(files.caCert) && fs.existsSync(files.caKey));
  if (caIsNew) {
    const generated = createCa(hostname, names);
    // Key first: a crash in between leaves no ca.crt, so the next start
    // regenerates the pair instead of pairing a certificate with a missing key.
    writeAtomically(files.caKey, generated.keyPem, 0o600);
    writeAtomically(files.caCert, generated.certPem, 0o644);
    ca = generated;
  } else if (!hasNameConstraints(fs.readFileSync(files.caCert))) {
    // Made before the CA was constrained. Replacing it would silently break every client that trusts it.
    log?.warn?.(
      { caFile: files.caCert },
      'the local TLS CA has no name constraints, so clients that trust it would accept it for any site; delete the tls folder of the data dir and restart to get a constrained one (clients must then trust the new ca.crt)',
    );
  }

  const serverReason = caIsNew ? 'new CA' : serverCertificateProblem(files.serverCert, files.serverKey, files.caCert);
  if (serverReason !== null) {
    let leafNames = names;
    if (ca === null) {
      ca = {
        cert: forge().pki.certificateFromPem(fs.readFileSync(files.caCert, 'utf8')),
        key: forge().pki.privateKeyFromPem(fs.readFileSync(files.caKey, 'utf8')) as Forge.pki.rsa.PrivateKey,
      };
      // A name outside the CA's constraints would make clients refuse the whole certificate.
      leafNames = namesPermittedBy(ca.cert, names);
      const refused = names.dnsNames.filter((name) => !leafNames.dnsNames.includes(name));
      if (refused.length > 0) {
        log?.warn?.(
          { caFile: files.caCert, names: refused },
          'the local TLS CA was made for another host name and cannot sign these names; delete the tls folder of the data dir and restart to get a CA for this host (clients must then trust the new ca.crt)',
        );
      }
    }
    const server = createServerCertificate(ca, hostname, leafNames);
    writeAtomically(files.serverKey, server.keyPem, 0o600);
    writeAtomically(files.serverCert, server.certPem, 0o644);
    log?.info(
      {
        caFile: files.caCert, certFile: files.serverCert, keyFile: files.serverKey, caGenerated: caIsNew, reason: serverReason,
        names: [...leafNames.dnsNames, ...leafNames.ipAddresses],
      },
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
    throw new StartupError('tls.keyFile is set but tls.certFile is not; set both, or neither to use the generated local CA');
  }
  if (configured.keyFile === null) {
    throw new StartupError('tls.certFile is set but tls.keyFile is not; set both, or neither to use the generated local CA');
  }
  const settings: Array<[string, string | null]> = [
    ['tls.certFile', configured.certFile],
    ['tls.keyFile', configured.keyFile],
    ['tls.caFile', configured.caFile],
  ];
  for (const [setting, file] of settings) {
    if (file !== null && !fs.existsSync(file)) {
      throw new StartupError(`${setting} names a file that does not exist: ${file}`);
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

function createCa(hostname: string, names: LocalNames): GeneratedPair {
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
    nameConstraintsExtension(names),
  ]);
  cert.sign(privateKey, forge().md.sha256.create());
  return { cert, key: privateKey, certPem: forge().pki.certificateToPem(cert), keyPem };
}

function createServerCertificate(ca: Issuer, hostname: string, names: LocalNames): GeneratedPair {
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
    {
      name: 'subjectAltName',
      altNames: [
        ...names.dnsNames.map((value) => ({ type: DNS_NAME, value })),
        ...names.ipAddresses.map((ip) => ({ type: IP_ADDRESS, ip })),
      ],
    },
    { name: 'subjectKeyIdentifier' },
    // forge's `keyIdentifier: true` would take this certificate's own key, so pass the CA's.
    { name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() },
  ]);
  cert.sign(ca.key, forge().md.sha256.create());
  return { cert, key: privateKey, certPem: forge().pki.certificateToPem(cert), keyPem };
}

const DNS_NAME = 2;
const IP_ADDRESS = 7;

export interface LocalNames {
  dnsNames: string[];
  ipAddresses: string[];
}

/** The names a generated server certificate is for, and all that the local CA may sign. */
export function localNames(hostname: string): LocalNames {
  const dnsNames = new Set(['localhost']);
  const host = hostname.toLowerCase();
  // Hostnames with characters outside DNS syntax would make the SAN invalid.
  if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host)) {
    dnsNames.add(host);
    // Clients that find the service over mDNS connect to <hostname>.local.
    if (!host.includes('.') && host !== 'localhost') dnsNames.add(`${host}.local`);
  }
  return { dnsNames: [...dnsNames], ipAddresses: ['127.0.0.1', '::1'] };
}

const NAME_CONSTRAINTS_OID = '2.5.29.30';

/**
 * NameConstraints (RFC 5280 4.2.1.10) with permitted subtrees for exactly `names`,
 * marked critical. forge reads this extension but cannot build it, so the DER is
 * assembled here. A DNS subtree also permits names below it (x.localhost); an IP
 * subtree is the address with an all-ones mask, so it permits that address only.
 * Name types not listed (e-mail, URI, directory names) stay unconstrained.
 */
function nameConstraintsExtension(names: LocalNames): { id: string; critical: true; value: Forge.asn1.Asn1 } {
  const { asn1 } = forge();
  const contextTag = (tag: number, constructed: boolean, value: string | Forge.asn1.Asn1[]) =>
    asn1.create(asn1.Class.CONTEXT_SPECIFIC, tag, constructed, value);
  const subtree = (base: Forge.asn1.Asn1) => asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [base]);
  const permitted = [
    ...names.dnsNames.map((name) => subtree(contextTag(DNS_NAME, false, name))),
    ...names.ipAddresses.map((ip) => {
      const address = ipBytes(ip);
      return subtree(contextTag(IP_ADDRESS, false, address + '\xff'.repeat(address.length)));
    }),
  ];
  const value = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [contextTag(0, true, permitted)]);
  return { id: NAME_CONSTRAINTS_OID, critical: true, value };
}

/** An IP address as forge's binary string (4 or 16 bytes). */
function ipBytes(ip: string): string {
  const bytes = (forge().util as unknown as { bytesFromIP(ip: string): string | null }).bytesFromIP(ip);
  if (bytes === null) throw new Error(`not an IP address: ${ip}`);
  return bytes;
}

/** `names` less those outside the CA's permitted subtrees (all of them when it has none). */
function namesPermittedBy(caCert: Forge.pki.Certificate, names: LocalNames): LocalNames {
  const extension = caCert.getExtension({ name: 'nameConstraints' }) as { permittedSubtrees?: Array<{ type: number; value: unknown }> } | undefined;
  const subtrees = extension?.permittedSubtrees;
  if (subtrees === undefined || subtrees.length === 0) return names;
  const dnsBases = subtrees.filter((s) => s.type === DNS_NAME && typeof s.value === 'string').map((s) => (s.value as string).toLowerCase());
  const ipBases = subtrees.filter((s) => s.type === IP_ADDRESS && typeof s.value === 'string').map((s) => s.value as string);
  const dnsPermitted = (name: string) => dnsBases.some((base) => name === base || name.endsWith(`.${base}`));
  const ipPermitted = (ip: string) => {
    const address = ipBytes(ip);
    return ipBases.some((base) => {
      if (base.length !== address.length * 2) return false;
      for (let i = 0; i < address.length; i++) {
        const mask = base.charCodeAt(address.length + i);
        if ((address.charCodeAt(i) & mask) !== (base.charCodeAt(i) & mask)) return false;
      }
      return true;
    });
  };
  return {
    dnsNames: dnsBases.length === 0 ? names.dnsNames : names.dnsNames.filter(dnsPermitted),
    ipAddresses: ipBases.length === 0 ? names.ipAddresses : names.ipAddresses.filter(ipPermitted),
  };
}

/**
 * Whether a certificate (PEM) has a name constraints extension. Looks for the
 * extension's DER-encoded OID (06 03 55 1d 1e) rather than parsing, so a
 * normal start does not load forge; those five bytes elsewhere in a
 * certificate would only silence the warning this feeds.
 */
function hasNameConstraints(pem: Buffer): boolean {
  const der = Buffer.from(new crypto.X509Certificate(pem).raw);
  return der.includes(Buffer.from([0x06, 0x03, 0x55, 0x1d, 0x1e]));
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
