// What the tests' reference servers (influxd, prometheus) share: a child process on a free
// loopback port with a temp dir of its own, its output kept for failure messages, plain HTTP
// requests with the answer's JSON parsed, a readiness probe, and a stop that ends the process
// (SIGTERM, then SIGKILL after 10 s) and removes the dir. A start that fails (the port picked was
// taken meanwhile) is tried again on a new port.

import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

export interface PeerAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  json: any;
}

/** Lines of output kept for failure messages. */
const KEPT_LINES = 300;

/** Keeps the last KEPT_LINES lines `child` writes (stdout and stderr) in `output`, for failure messages. */
export function keepOutputTail(child: ChildProcess, output: string[]): void {
  const keep = (chunk: Buffer) => {
    output.push(...chunk.toString().split('\n').filter(Boolean));
    if (output.length > KEPT_LINES) output.splice(0, output.length - KEPT_LINES);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
}

export abstract class PeerProcess {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly output: string[] = [];
  private readonly exited: Promise<void>;

  protected constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    readonly dir: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    keepOutputTail(child, this.output);
  }

  /** The server's name in messages. */
  protected abstract readonly name: string;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** The last lines the server wrote (for failure messages). */
  get log(): string {
    return this.output.join('\n');
  }

  /** Any HTTP request to the server. */
  request(method: string, urlPath: string, body: string | Buffer | null = null, headers: Record<string, string> = {}): Promise<PeerAnswer> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: this.port, method, path: urlPath, agent: this.agent, headers: { ...headers, ...(body !== null ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (body !== null) req.write(body);
      req.end();
    });
  }

  async stop(): Promise<void> {
    this.agent.destroy();
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  /** Waits until `ready` answers true (a refused connection counts as not yet), or the process exits, or `timeoutMs` passes. */
  protected async waitReady(timeoutMs: number, ready: () => Promise<boolean>, what: string): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`${this.name} exited (${this.child.exitCode ?? this.child.signalCode}) before ${what}:\n${this.log}`);
      try {
        if (await ready()) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > until) throw new Error(`${this.name} did not get to ${what} within ${timeoutMs} ms:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Runs `attempt` up to three times (each picks new ports and a new dir); the first server that starts. */
export async function startWithRetries<T extends PeerProcess>(attempt: () => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let i = 0; i < 3; i++) {
    try {
      return await attempt();
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}
