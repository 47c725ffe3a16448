// Starts the real service as a child process (ephemeral port, temp data dir),
// downloads its CA from /svcapi/ca-cert and then talks HTTPS to it trusting
// only that CA. Every API test goes through this.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export const ADMIN_EMAIL = 'admin@historian.test';
export const ADMIN_PASSWORD = 'admin-password-for-tests';

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
  text: string;
  /** Parsed JSON when the reply is JSON, else undefined. */
  body: any;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent as is (no JSON encoding). */
  rawBody?: string | Buffer;
  token?: string;
  headers?: Record<string, string>;
}

export interface StartOptions {
  /** Reuse a data dir (restart tests); a new temp dir otherwise. */
  dataDir?: string;
  /** Written to a file and passed as HISTORIAN_CONFIG. */
  config?: Record<string, unknown>;
  env?: Record<string, string | undefined>;
  /** Set false when the service has no CA to download (configured certificates). */
  trustCa?: boolean;
  /** The program and its arguments, instead of `node dist/src/main.js` (the `historian` command). */
  command?: readonly string[];
  cwd?: string;
}

export class TestService {
  readonly logLines: string[] = [];
  private exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private agent: https.Agent | null = null;
  ca = '';

  constructor(readonly child: ChildProcess, readonly port: number, readonly dataDir: string, exited: TestService['exited']) {
    this.exited = exited;
  }

  get baseUrl(): string {
    return `https://localhost:${this.port}`;
  }

  /** Logs parsed as JSON objects (pino lines). */
  logs(): Array<Record<string, unknown>> {
    return this.logLines.flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
  }

  async trustCa(): Promise<void> {
    const res = await rawRequest({ port: this.port, method: 'GET', path: '/svcapi/ca-cert', rejectUnauthorized: false });
    if (res.status !== 200) throw new Error(`ca-cert answered ${res.status}`);
    this.ca = res.text;
    this.agent = new https.Agent({ ca: this.ca, keepAlive: true, maxSockets: 16 });
  }

  request(method: string, urlPath: string, opts: RequestOptions = {}): Promise<HttpResult> {
    const headers: Record<string, string> = { ...opts.headers };
    let payload: string | Buffer | undefined;
    if (opts.rawBody !== undefined) payload = opts.rawBody;
    else if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    return rawRequest({ port: this.port, method, path: urlPath, headers, payload, agent: this.agent ?? undefined, ca: this.ca });
  }

  get(urlPath: string, token?: string) {
    return this.request('GET', urlPath, { token });
  }

  post(urlPath: string, body: unknown, token?: string) {
    return this.request('POST', urlPath, { body, token });
  }

  async login(email: string, password: string): Promise<string> {
    const res = await this.post('/svcapi/login', { email, password });
    if (res.status !== 200) throw new Error(`login ${email} answered ${res.status}: ${res.text}`);
    return res.body.token as string;
  }

  adminToken(): Promise<string> {
    return this.login(ADMIN_EMAIL, ADMIN_PASSWORD);
  }

  /** Registers and logs in a new read-write account. */
  async newUser(email: string, password = 'user-password-1'): Promise<string> {
    const res = await this.post('/svcapi/register', { email, password, name: email });
    if (res.body?.success !== true) throw new Error(`register ${email}: ${res.text}`);
    return this.login(email, password);
  }

  /**
   * Moves the service's auth clock (token expiry, login rate limits, lockout) `seconds`
   * forward, instead of waiting them out. Needs the setting debug.clockRoute and an admin token.
   */
  async advanceAuthClock(seconds: number, adminToken: string): Promise<void> {
    const res = await this.post('/svcapi/_debug/advance_clock', { seconds }, adminToken);
    if (res.status !== 200) throw new Error(`advance_clock answered ${res.status}: ${res.text}`);
  }

  /** Sends `signal` and waits for the process to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.agent?.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }

  /** Stops the service and removes its data dir and the settings file beside it. */
  async dispose(): Promise<void> {
    await this.stop('SIGKILL');
    fs.rmSync(this.dataDir, { recursive: true, force: true });
    fs.rmSync(settingsFileFor(this.dataDir), { force: true });
  }
}

export function tempDir(prefix = 'historian-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** The settings file lives beside the data dir, so a test can wipe the dir and restart on the same settings. */
function settingsFileFor(dataDir: string): string {
  return path.join(dataDir, '..', `${path.basename(dataDir)}.config.json`);
}

/** Settings that keep tests fast without changing behaviour under test. */
/** The per-address login limit is raised: every test client logs in from 127.0.0.1 (tests of that limit set it). */
const TEST_CONFIG = { auth: { scryptCost: 1024, rateLimitRequestsPerAddress: 1_000_000 } };

export async function startService(opts: StartOptions = {}): Promise<TestService> {
  const dataDir = opts.dataDir ?? tempDir();
  const configFile = settingsFileFor(dataDir);
  fs.writeFileSync(configFile, JSON.stringify(deepMerge(TEST_CONFIG, opts.config ?? {})));
  const env: Record<string, string | undefined> = {
    ...process.env,
    // A port set in the settings (a cluster node's advertised URL names it) must not be overridden.
    HISTORIAN_PORT: String((opts.config as { server?: { port?: number } } | undefined)?.server?.port ?? 0),
    HISTORIAN_DATA_DIR: dataDir,
    HISTORIAN_CONFIG: configFile,
    HISTORIAN_ADMIN_EMAIL: ADMIN_EMAIL,
    HISTORIAN_ADMIN_PASSWORD: ADMIN_PASSWORD,
    HISTORIAN_LOG_LEVEL: 'info',
    ...opts.env,
  };
  const [program, ...args] = opts.command ?? [process.execPath, MAIN];
  const child = spawn(program!, args, { env: env as NodeJS.ProcessEnv, cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const lines: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    let stderr = '';
    let pending = '';
    const timer = setTimeout(() => reject(new Error(`service did not start in time\n${lines.join('\n')}\n${stderr}`)), 30_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      lines.push(...chunk.toString().split('\n').filter(Boolean));
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      const parts = pending.split('\n');
      pending = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        // JSON lines, or with log.format pretty `<time> INFO  listening port=<n> …`.
        const pretty = / INFO +listening\b.*\bport=(\d+)/.exec(line);
        if (line.includes('"msg":"listening"') || pretty) {
          clearTimeout(timer);
          resolve(pretty ? Number(pretty[1]) : (JSON.parse(line) as { port: number }).port);
        }
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${code ?? signal}) before listening\n${lines.join('\n')}\n${stderr}`));
    });
  });
  const service = new TestService(child, port, dataDir, exited);
  service.logLines.push(...lines);
  // Keep collecting into the same array after start.
  lines.length = 0;
  child.stdout!.removeAllListeners('data');
  child.stderr!.removeAllListeners('data');
  let pending = '';
  const collect = (chunk: Buffer) => {
    pending += chunk.toString();
    const parts = pending.split('\n');
    pending = parts.pop()!;
    service.logLines.push(...parts);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  if (opts.trustCa !== false) await service.trustCa();
  return service;
}

interface RawRequest {
  port: number;
  /** The address to connect from and to: 127.0.0.1 unless given (`::1` makes a second client address). */
  host?: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  payload?: string | Buffer;
  agent?: https.Agent;
  ca?: string;
  rejectUnauthorized?: boolean;
}

export function rawRequest(r: RawRequest): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: r.host ?? '127.0.0.1',
        servername: 'localhost',
        port: r.port,
        method: r.method,
        path: r.path,
        headers: { ...r.headers, ...(r.payload !== undefined ? { 'content-length': String(Buffer.byteLength(r.payload)) } : {}) },
        agent: r.agent,
        ca: r.agent ? undefined : r.ca || undefined,
        rejectUnauthorized: r.rejectUnauthorized ?? true,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const text = bytes.toString('utf8');
          let body: unknown;
          if (String(res.headers['content-type'] ?? '').includes('json')) {
            try {
              body = JSON.parse(text);
            } catch {
              body = undefined;
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes, text, body });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (r.payload !== undefined) req.write(r.payload);
    req.end();
  });
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? deepMerge(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}
