// A real MQTT broker for the collector tests: Debian's mosquitto (2.0), on a free loopback port
// with a config generated into its own temp dir. Persistence is on in that dir, so a restart
// (stop, then start on the same port and dir) keeps persistent sessions and the QoS 1 messages
// queued for them, as a production broker does. Optional: a password file (made with
// mosquitto_passwd, anonymous clients refused) and a TLS listener whose certificate comes from a
// throwaway CA (the service's own generator, src/http/certificates.ts).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ensureCertificates } from '../../src/http/certificates.js';
import { keepOutputTail } from './peer-process.js';
import { freePort } from './ports.js';

export const MOSQUITTO_BIN = '/usr/sbin/mosquitto';
const PASSWD_BIN = '/usr/bin/mosquitto_passwd';

/** A `skip` reason for node:test when the broker is not installed, else false. */
export const mosquittoSkip: string | false = fs.existsSync(MOSQUITTO_BIN) ? false : `${MOSQUITTO_BIN} is not installed (apt-get install mosquitto; .ci/run does)`;

export interface MosquittoOptions {
  /** username → password; when given, anonymous clients are refused. */
  users?: Record<string, string>;
  /** Also listen with TLS (certificate for localhost and 127.0.0.1 from a throwaway CA). */
  tls?: boolean;
  /** Messages queued per offline persistent client (mosquitto's default of 1000 is too few for the bench). */
  maxQueuedMessages?: number;
}


export class Mosquitto {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly output: string[] = [];

  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly tlsPort: number | null,
    /** The CA that signed the TLS listener's certificate (PEM), or '' without TLS. */
    readonly caPem: string,
  ) {}

  static async start(opts: MosquittoOptions = {}): Promise<Mosquitto> {
    let lastError: unknown;
    // The ports were free a moment ago; another process may take one meanwhile: try new ones.
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mosquitto-test-'));
      const port = await freePort();
      const tlsPort = opts.tls ? await freePort() : null;
      let caPem = '';
      const lines = [
        'per_listener_settings false',
        `listener ${port} 127.0.0.1`,
        'persistence true',
        `persistence_location ${dir}/`,
        'persistence_file mosquitto.db',
        // stay as the user that started it: the temp dir is private to that user
        'user root',
        `max_queued_messages ${opts.maxQueuedMessages ?? 100_000}`,
        'log_dest stderr',
        'log_type error',
        'log_type warning',
        'log_type notice',
        'log_type information',
        'log_type subscribe',
        'connection_messages true',
        'log_timestamp true',
      ];
      if (opts.users) {
        const file = path.join(dir, 'passwd');
        fs.writeFileSync(file, '', { mode: 0o600 });
        for (const [user, password] of Object.entries(opts.users)) {
          const made = spawnSync(PASSWD_BIN, ['-b', file, user, password], { encoding: 'utf8' });
          if (made.status !== 0) throw new Error(`mosquitto_passwd failed: ${made.stderr}`);
        }
        lines.push('allow_anonymous false', `password_file ${file}`);
      } else {
        lines.push('allow_anonymous true');
      }
      if (tlsPort !== null) {
        const tls = ensureCertificates(dir, { certFile: null, keyFile: null, caFile: null }, undefined, 'localhost');
        caPem = fs.readFileSync(tls.caFile!, 'utf8');
        lines.push(`listener ${tlsPort} 127.0.0.1`, `cafile ${tls.caFile}`, `certfile ${tls.certFile}`, `keyfile ${tls.keyFile}`);
      }
      fs.writeFileSync(path.join(dir, 'mosquitto.conf'), `${lines.join('\n')}\n`);
      const broker = new Mosquitto(dir, port, tlsPort, caPem);
      try {
        await broker.launch();
        return broker;
      } catch (err) {
        lastError = err;
        await broker.dispose();
      }
    }
    throw lastError;
  }

  get url(): string {
    return `mqtt://127.0.0.1:${this.port}`;
  }

  get tlsUrl(): string {
    if (this.tlsPort === null) throw new Error('this broker was started without TLS');
    return `mqtts://localhost:${this.tlsPort}`;
  }

  /** The broker's last lines of output (for failure messages). */
  get log(): string {
    return this.output.join('\n');
  }

  /** The broker's process id (for CPU figures), or undefined while it is stopped. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== null;
  }

  private async launch(): Promise<void> {
    const child = spawn(MOSQUITTO_BIN, ['-c', path.join(this.dir, 'mosquitto.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    keepOutputTail(child, this.output);
    const until = Date.now() + 15_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`mosquitto exited (${child.exitCode ?? child.signalCode}) before listening:\n${this.log}`);
      if (await accepts(this.port)) return;
      if (Date.now() > until) throw new Error(`mosquitto did not listen on ${this.port} within 15 s:\n${this.log}`);
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  }

  /** Stops the broker (SIGTERM: it saves its persistence file; SIGKILL: it does not). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    this.child = null;
  }

  /** Starts it again on the same ports and dir (sessions and queued messages kept after a SIGTERM stop). */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  async dispose(): Promise<void> {
    await this.stop('SIGKILL');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * A TCP relay in front of a broker that cuts every connection through it `everyMs` after it
 * opened: "a broker that drops the connection every second".
 */
export async function flakyRelay(targetPort: number, everyMs: number): Promise<{ port: number; cuts: () => number; close: () => Promise<void> }> {
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    sockets.add(client);
    sockets.add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    const timer = setTimeout(() => {
      cuts++;
      cut();
    }, everyMs);
    client.on('close', () => {
      clearTimeout(timer);
      cut();
    });
    upstream.on('close', cut);
    client.on('error', cut);
    upstream.on('error', cut);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cuts: () => cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
