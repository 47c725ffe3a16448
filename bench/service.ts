// Servers under test as child processes (ours and the peers), their peak
// memory and disk use, and an HTTPS client with keep-alive sockets that
// trusts only the CA it is given.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import tls, { type TLSSocket } from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const OUR_MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));

export const ADMIN_EMAIL = 'admin@bench.local';
export const ADMIN_PASSWORD = 'bench-admin-password';

// ---- HTTPS client ---------------------------------------------------------------------------

/**
 * TLS 1.3 suites in the order browsers offer them. Node's own default puts AES-256-GCM first;
 * Go servers (VictoriaMetrics, InfluxDB) pick AES-128-GCM whatever the client prefers, while
 * ours, like most servers, takes the client's first choice. Without this list ours alone
 * would encrypt with the slower cipher (AES-256-GCM is about 35% slower here).
 */
const CLIENT_CIPHERS = ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256', tls.DEFAULT_CIPHERS].join(':');

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  /** Joined from the received chunks on first use, so a timed loop that only counts bytes never copies them. */
  readonly body: Buffer;
  /** Bytes received. */
  bodyLength: number;
  /** From the request being issued to the last byte of the reply. */
  ms: number;
}

export class HttpsClient {
  readonly agent: https.Agent;
  /** Sent with every request (for example authorization). */
  readonly headers: Record<string, string> = {};

  /** `sockets` keep-alive connections at most; more concurrent requests queue in the agent. */
  constructor(readonly port: number, readonly ca: string, sockets: number) {
    this.agent = new https.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, ca, ciphers: CLIENT_CIPHERS });
  }

  /** The TLS cipher suite this client and the server agree on. */
  tlsCipher(urlPath = '/'): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', servername: 'localhost', port: this.port, path: urlPath, ca: this.ca, ciphers: CLIENT_CIPHERS, agent: false }, (res) => {
        resolve((res.socket as TLSSocket).getCipher().name);
        res.resume();
      });
      req.on('error', reject);
      req.end();
    });
  }

  request(method: string, urlPath: string, body?: string | Uint8Array, headers: Record<string, string> = {}): Promise<Reply> {
    const start = performance.now();
    return new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: '127.0.0.1',
          servername: 'localhost',
          port: this.port,
          method,
          path: urlPath,
          agent: this.agent,
          headers: {
            ...this.headers,
            ...headers,
            ...(body !== undefined ? { 'content-length': String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let bodyLength = 0;
          res.on('data', (c: Buffer) => {
            chunks.push(c);
            bodyLength += c.length;
          });
          res.on('end', () => {
            const ms = performance.now() - start;
            let joined: Buffer | null = null;
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              get body() {
                joined ??= chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, bodyLength);
                return joined;
              },
              bodyLength,
              ms,
            });
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err) => reject(new Error(`${method} ${urlPath}: ${err.message}`)));
      req.end(body);
    });
  }

  get(urlPath: string, headers?: Record<string, string>): Promise<Reply> {
    return this.request('GET', urlPath, undefined, headers);
  }

  postJson(urlPath: string, value: unknown): Promise<Reply> {
    return this.request('POST', urlPath, JSON.stringify(value), { 'content-type': 'application/json' });
  }

  close(): void {
    this.agent.destroy();
  }
}

export function json(reply: Reply): any {
  return JSON.parse(reply.body.toString('utf8'));
}

// ---- child processes ------------------------------------------------------------------------

const live = new Set<ChildProcess>();
// A benchmark that dies half way must not leave servers running.
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

/** A server process: output kept as a short tail for error reports, peak RSS sampled while it runs. */
export class ServerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly tail: string[] = [];
  private readonly lineListeners: Array<(line: string) => void> = [];
  private peakKb = 0;
  private readonly sampler: NodeJS.Timeout;

  constructor(readonly name: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env, private readonly tailLines = 200) {
    this.child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this.child);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        live.delete(this.child);
        clearInterval(this.sampler);
        resolve({ code, signal });
      });
    });
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let pending = '';
      stream.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) this.onLine(line);
      });
    }
    // VmHWM is already a peak; sampling it only guards against the process
    // dying before the final read.
    this.sampler = setInterval(() => this.samplePeak(), 250);
    this.sampler.unref();
  }

  get pid(): number {
    return this.child.pid!;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private onLine(line: string): void {
    for (const listener of [...this.lineListeners]) listener(line);
    // Successful request lines of our service say nothing about a failure and would push out the lines that do.
    if (/"msg":"request"/.test(line) && /"status":[23]\d\d/.test(line)) return;
    this.tail.push(line);
    if (this.tail.length > this.tailLines) this.tail.shift();
  }

  /** Resolves with the first output line that `match` accepts. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no expected output in ${timeoutMs} ms\n${this.logTail().join('\n')}`)), timeoutMs);
      const listener = (line: string) => {
        if (!match(line)) return;
        clearTimeout(timer);
        this.lineListeners.splice(this.lineListeners.indexOf(listener), 1);
        resolve(line);
      };
      this.lineListeners.push(listener);
      void this.exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited (${code ?? signal}) while starting\n${this.logTail().join('\n')}`));
      });
    });
  }

  logTail(lines = 40): string[] {
    return this.tail.slice(-lines);
  }

  private samplePeak(): void {
    const kb = vmHwmKb(this.pid);
    if (kb !== null && kb > this.peakKb) this.peakKb = kb;
  }

  /** Peak resident set size of the process so far (VmHWM), in bytes. */
  peakRssBytes(): number {
    if (this.running) this.samplePeak();
    return this.peakKb * 1024;
  }

  /** Asks the process to stop; kills it if it has not exited within `graceMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.running) {
      this.samplePeak();
      this.child.kill(signal);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
      const result = await this.exited;
      clearTimeout(timer);
      return result;
    }
    return this.exited;
  }
}

/** VmHWM ("high water mark" of resident memory) from /proc, in kB; null when the process is gone. */
export function vmHwmKb(pid: number): number | null {
  return statusKb(pid, 'VmHWM');
}

/** VmRSS (resident memory now) from /proc, in kB; null when the process is gone. */
export function vmRssKb(pid: number): number | null {
  return statusKb(pid, 'VmRSS');
}

function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

// ---- CPU used by other processes -----------------------------------------------------------

const TICKS_PER_SECOND = 100; // USER_HZ, 100 on every Linux build we run on

/** User and system time of every process on the machine (interrupt time is left out: most of it is our own loopback traffic). */
function machineBusySeconds(): number {
  try {
    const [user, nice, system] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return (user + nice + system) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** User + system CPU seconds of a process (all its threads) from /proc; 0 when it is gone. */
export function processCpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** User + system CPU seconds of one thread of a process; the main thread's id is the process id. */
export function threadCpuSeconds(pid: number, tid = pid): number {
  return statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
}

/** User and system CPU seconds of one thread apart (system time on loopback includes the receiving side's TCP work). */
export function threadCpuSplit(pid: number, tid = pid): { user: number; system: number } {
  return statCpuSplit(`/proc/${pid}/task/${tid}/stat`);
}

function statCpuSeconds(statFile: string): number {
  const { user, system } = statCpuSplit(statFile);
  return user + system;
}

function statCpuSplit(statFile: string): { user: number; system: number } {
  try {
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const stat = fs.readFileSync(statFile, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(rest[11]) / TICKS_PER_SECOND, system: Number(rest[12]) / TICKS_PER_SECOND };
  } catch {
    return { user: 0, system: 0 };
  }
}

function oursCpuSeconds(): number {
  const self = process.cpuUsage();
  let total = (self.user + self.system) / 1e6;
  for (const child of live) if (child.pid) total += processCpuSeconds(child.pid);
  return total;
}

/**
 * Starts measuring how many cores other processes (not this benchmark, not
 * the servers it started) kept busy: the machine is shared, and a figure
 * taken while something else ran is not comparable.
 */
export function cpuMeter(): () => number {
  const start = performance.now();
  const busy0 = machineBusySeconds();
  const ours0 = oursCpuSeconds();
  return () => {
    const wall = (performance.now() - start) / 1000;
    const other = machineBusySeconds() - busy0 - (oursCpuSeconds() - ours0);
    return wall > 0 ? Math.max(0, other / wall) : NaN;
  };
}

/**
 * Waits (at most `maxSeconds`) until other processes have used less than a
 * fifth of a core for three seconds in a row, so the run starts on a quiet machine.
 */
export async function waitForQuiet(maxSeconds: number): Promise<void> {
  const deadline = performance.now() + maxSeconds * 1000;
  let quiet = 0;
  while (quiet < 3 && performance.now() < deadline) {
    const other = cpuMeter();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const cores = other();
    quiet = cores < 0.2 ? quiet + 1 : 0;
    if (quiet === 0) process.stderr.write(`  waiting for a quiet machine: other processes use ${cores.toFixed(1)} cores\n`);
  }
}

export { freePort } from '../test/support/ports.js';

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// ---- disk -----------------------------------------------------------------------------------

export interface DiskUsage {
  files: number;
  /** Sum of file sizes. */
  bytes: number;
  /** Blocks the file system allocated (what `du` shows). */
  allocated: number;
}

export function diskUsage(dir: string): DiskUsage {
  const total: DiskUsage = { files: 0, bytes: 0, allocated: 0 };
  const walk = (p: string) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st) return; // removed while we walked (compactions, temp files)
    if (st.isDirectory()) {
      let entries: string[] = [];
      try {
        entries = fs.readdirSync(p);
      } catch {
        return;
      }
      for (const entry of entries) walk(path.join(p, entry));
    } else if (st.isFile()) {
      total.files++;
      total.bytes += st.size;
      total.allocated += st.blocks * 512;
    }
  };
  walk(dir);
  return total;
}

// ---- our service ----------------------------------------------------------------------------

export interface OurService {
  process: ServerProcess;
  port: number;
  dataDir: string;
  ca: string;
  /** An admin's bearer token. */
  token: string;
  /** A client with `sockets` keep-alive connections that sends the admin token. */
  client(sockets: number): HttpsClient;
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Stops it and removes its data dir and settings file. */
  dispose(): Promise<void>;
}

/**
 * The environment and node flags the `historian` command's launcher applies to the service
 * (bin/memory-settings.json, which bin/historian.js reads), so a bench measures what
 * `npm start`, `historian serve` and the systemd unit run.
 */
export function npmStartCommand(): { env: Record<string, string>; nodeFlags: string[] } {
  const settings = JSON.parse(fs.readFileSync(new URL('../../bin/memory-settings.json', import.meta.url), 'utf8')) as { env: Record<string, string>; nodeFlags: string[] };
  return { env: { ...settings.env }, nodeFlags: [...settings.nodeFlags] };
}

/**
 * Starts `node dist/src/main.js` like an operator would (temp data dir, port
 * 0, admin credentials, a settings file), fetches its CA from
 * /svcapi/ca-cert and logs in as the admin.
 */
export async function startOurService(settings: Record<string, unknown> = {}): Promise<OurService> {
  const dataDir = tempDir('historian-bench-');
  const configFile = `${dataDir}.config.json`;
  fs.writeFileSync(configFile, JSON.stringify(settings));
  // HISTORIAN_BENCH_NODE_ARGS adds node flags to our server (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
  const nodeArgs = (process.env.HISTORIAN_BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // The environment and node flags of `npm start`, so the bench measures what operators run.
  const start = npmStartCommand();
  const proc = new ServerProcess('historian', process.execPath, [...start.nodeFlags, ...nodeArgs, OUR_MAIN], {
    ...process.env,
    ...start.env,
    HISTORIAN_PORT: '0',
    HISTORIAN_DATA_DIR: dataDir,
    HISTORIAN_CONFIG: configFile,
    HISTORIAN_ADMIN_EMAIL: ADMIN_EMAIL,
    HISTORIAN_ADMIN_PASSWORD: ADMIN_PASSWORD,
  });
  const listening = await proc.waitForLine((line) => line.includes('"msg":"listening"'), 60_000).catch(async (err: unknown) => {
    // A service that did not start (a setting it refuses, say) leaves no temp dir behind.
    await proc.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(configFile, { force: true });
    throw err;
  });
  const port = (JSON.parse(listening) as { port: number }).port;
  const ca = await fetchCa(port);
  const login = new HttpsClient(port, ca, 1);
  const reply = await login.postJson('/svcapi/login', { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
  login.close();
  if (reply.status !== 200) throw new Error(`login answered ${reply.status}: ${reply.body.toString()}`);
  const token = json(reply).token as string;
  const clients: HttpsClient[] = [];
  const stop = async () => {
    for (const client of clients.splice(0)) client.close();
    return proc.stop('SIGTERM');
  };
  return {
    process: proc,
    port,
    dataDir,
    ca,
    token,
    client(sockets) {
      const client = new HttpsClient(port, ca, sockets);
      client.headers.authorization = `Bearer ${token}`;
      clients.push(client);
      return client;
    },
    stop,
    async dispose() {
      await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(configFile, { force: true });
    },
  };
}

/** The CA is public; this one request is the only one that does not verify the server. */
async function fetchCa(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path: '/svcapi/ca-cert', rejectUnauthorized: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`ca-cert answered ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}
