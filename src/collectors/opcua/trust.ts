// Trusting the server: exactly the certificate whose SHA-1 thumbprint the collector names, like an
// SSH host key, never "accept any". node-opcua asks its client certificate manager
// (`checkCertificate`) about the certificate a server presents in its endpoints before it opens a
// secure channel; this object is that manager, with no PKI folders to keep (no trust list, no
// "rejected" folder growing with every attempt). It also answers the client's own start-up checks
// on the service's application certificate (made by app-certificate.ts, so trusted as is).

import crypto from 'node:crypto';
import type { OpcuaLib } from './library.js';

/** The thumbprint (hex) of the leaf certificate of a DER chain. */
export function leafThumbprint(der: Buffer): string {
  return crypto.createHash('sha1').update(firstDer(der)).digest('hex');
}

/** The first DER element of a concatenated chain (OPC UA servers may send leaf + issuers). */
export function firstDer(der: Buffer): Buffer {
  if (der.length < 2 || der[0] !== 0x30) return der;
  const first = der[1]!;
  if (first < 0x80) return der.subarray(0, Math.min(der.length, 2 + first));
  const n = first & 0x7f;
  if (n === 0 || n > 4 || der.length < 2 + n) return der;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + der[2 + i]!;
  return der.subarray(0, Math.min(der.length, 2 + n + len));
}

export class ThumbprintTrust {
  /** What the server presented at the last check (hex), for the error a user copies the thumbprint from. */
  presented: string | null = null;
  /** Why the last check failed, when it did. */
  problem: string | null = null;

  constructor(
    private readonly lib: OpcuaLib,
    /** Lower-case hex; undefined: nothing is trusted. */
    private readonly expected: string | undefined,
    readonly rootDir: string,
    readonly privateKey: string,
    private readonly ownThumbprint: string,
  ) {}

  async initialize(): Promise<void> {}
  async dispose(): Promise<void> {}
  async withLock2<T>(action: () => Promise<T>): Promise<T> {
    return action();
  }
  async trustCertificate(): Promise<void> {}

  /** The client's start-up check of its own certificate; any other certificate goes through checkCertificate. */
  async verifyCertificate(certificate: Buffer): Promise<string> {
    if (leafThumbprint(certificate) === this.ownThumbprint) return 'Good';
    return (await this.checkCertificate(certificate)) === this.lib.StatusCodes.Good ? 'Good' : 'BadCertificateUntrusted';
  }

  async checkCertificate(certificate: Buffer): Promise<unknown> {
    const { StatusCodes } = this.lib;
    const thumbprint = leafThumbprint(certificate);
    this.presented = thumbprint;
    if (this.expected === undefined || thumbprint !== this.expected) {
      this.problem = this.expected === undefined
        ? `the server presented a certificate with SHA-1 thumbprint ${thumbprint}; set connection.server_certificate_sha1 to it to trust this server`
        : `the server presented a certificate with SHA-1 thumbprint ${thumbprint}, not the trusted ${this.expected}`;
      return StatusCodes.BadCertificateUntrusted;
    }
    // The named certificate, still within its validity (an expired one is refused as OPC UA wants).
    try {
      const x509 = new crypto.X509Certificate(firstDer(certificate));
      const now = Date.now();
      if (Date.parse(x509.validTo) < now) {
        this.problem = `the trusted server certificate ${thumbprint} expired on ${x509.validTo}`;
        return StatusCodes.BadCertificateTimeInvalid;
      }
      if (Date.parse(x509.validFrom) > now) {
        this.problem = `the trusted server certificate ${thumbprint} is not valid before ${x509.validFrom}`;
        return StatusCodes.BadCertificateTimeInvalid;
      }
    } catch {
      this.problem = `the server presented a certificate that does not parse (SHA-1 thumbprint ${thumbprint})`;
      return StatusCodes.BadCertificateInvalid;
    }
    this.problem = null;
    return StatusCodes.Good;
  }

  async createSelfSignedCertificate(): Promise<void> {
    throw new Error('the OPC UA application certificate is made by the service (app-certificate.ts)');
  }
}
