// A real node-opcua server for the OPC UA collector's tests, in a child process
// (opcua-server-process.ts) so a test can kill it and start it again on the same port with the same
// PKI (so the same certificate and thumbprint), as a plant server restarts.

import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.js';

const CHILD = fileURLToPath(new URL('./opcua-server-process.js', import.meta.url));

export interface OpcuaServerOptions {
  port: number;
  /** Kept across restarts: the server's certificate lives here. */
  pkiDir: string;
  /** Numeric variables under Plant (default 1,000). */
  variables?: number;
  lines?: number;
  /** Every variable changes every periodMs; default: 100–500 ms by index. */
  periodMs?: number;
  /** Some variables go Bad or Uncertain on every other change (default true; the bench turns it off). */
  faults?: boolean;
  /** Variables keep history (HistoryRead raw). */
  historize?: boolean;
  users?: Record<string, string>;
  allowAnonymous?: boolean;
  securityModes?: Array<'None' | 'Sign' | 'SignAndEncrypt'>;
  securityPolicies?: Array<'None' | 'Basic256Sha256'>;
  /** Application certificates (PEM) the server trusts for secure channels. */
  trustedClientPems?: string[];
  /** User certificates (PEM) the server accepts for certificate auth. */
  trustedUserPems?: string[];
}

export interface OpcuaVariableInfo {
  index: number;
  /** Browse path below Plant, e.g. `Line03/D00017`. */
  path: string;
  nodeId: string;
  dataType: 'D' | 'I' | 'B' | 'U' | 'F';
  /** Bad on every other change. */
  bad: boolean;
  /** Uncertain on every other change. */
  uncertain: boolean;
}

/** The kind of every 10 variables: Double ×4, Int32 ×3, Boolean, UInt16, Float (opcua-server-process.ts makes them). */
const KIND_PREFIXES = ['D', 'D', 'D', 'D', 'I', 'I', 'I', 'B', 'U', 'F'] as const;

/** Browse path below Plant and NodeId of variable `index` of `total` on `lines` lines. */
export function variableInfo(index: number, total = 1000, lines = 10): OpcuaVariableInfo {
  const perLine = Math.ceil(total / lines);
  const lineName = `Line${String(Math.floor(index / perLine)).padStart(2, '0')}`;
  const prefix = KIND_PREFIXES[index % KIND_PREFIXES.length]!;
  const name = `${prefix}${String(index).padStart(5, '0')}`;
  return {
    index,
    path: `${lineName}/${name}`,
    nodeId: `ns=1;s=Plant.${lineName}.${name}`,
    dataType: prefix,
    bad: index % 200 === 199,
    uncertain: index % 250 === 124,
  };
}

export class TestOpcuaServer {
  child: ChildProcess | null = null;
  endpointUrl = '';
  certificatePem = '';
  /** The source timestamp of every Line's Info/Setpoint (a value that never changes). */
  setpointTs = 0;
  readonly stderr: string[] = [];

  constructor(readonly options: OpcuaServerOptions) {}

  /** Hex SHA-1 of the server's certificate, as a collector names it in server_certificate_sha1. */
  get thumbprint(): string {
    return crypto.createHash('sha1').update(new crypto.X509Certificate(this.certificatePem).raw).digest('hex');
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const child = spawn(process.execPath, [CHILD, JSON.stringify(this.options)], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr.push(chunk.toString());
      if (this.stderr.length > 200) this.stderr.shift();
    });
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => reject(new Error(`OPC UA test server not ready within ${timeoutMs} ms: ${this.stderr.join('').slice(-2000)}`)), timeoutMs);
      child.stdout!.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const line = buffered.slice(0, nl);
          buffered = buffered.slice(nl + 1);
          if (!line.startsWith('{"ready"')) continue;
          const ready = JSON.parse(line) as { endpointUrl: string; certificatePem: string; setpointTs: number };
          this.endpointUrl = ready.endpointUrl;
          this.setpointTs = ready.setpointTs;
          this.certificatePem = ready.certificatePem;
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`OPC UA test server exited (${code ?? signal}) before it was ready: ${this.stderr.join('').slice(-2000)}`));
      });
    });
  }

  /** Ends the server: SIGKILL (a crash, the connection just breaks) or SIGTERM (an orderly shutdown). */
  async stop(signal: 'SIGKILL' | 'SIGTERM' = 'SIGKILL'): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** Stops it for good and removes its PKI dir. */
  async dispose(): Promise<void> {
    await this.stop();
    fs.rmSync(this.options.pkiDir, { recursive: true, force: true });
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** The server's pid (for CPU figures in the bench). */
  get pid(): number | undefined {
    return this.child?.pid;
  }
}

/** A server on a free port with its PKI in a new temp dir. */
export async function startOpcuaServer(options: Partial<OpcuaServerOptions> = {}): Promise<TestOpcuaServer> {
  const server = new TestOpcuaServer({
    port: options.port ?? (await freePort()),
    pkiDir: options.pkiDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'opcua-test-pki-')),
    ...options,
  } as OpcuaServerOptions);
  await server.start();
  return server;
}
