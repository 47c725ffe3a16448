// A real etcd (Debian's etcd-server) on loopback ports, in a temp dir, for the cluster tests.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/wait-for.js';

export const ETCD_BIN = '/usr/bin/etcd';

export class TestEtcd {
  private constructor(readonly endpoint: string, private child: ChildProcess, private readonly dir: string, private readonly args: string[]) {}

  static async start(): Promise<TestEtcd> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'etcd-test-'));
    const client = await freePort();
    const peer = await freePort();
    const endpoint = `http://127.0.0.1:${client}`;
    const args = [
      '--name', 'test', '--data-dir', dir,
      '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `test=http://127.0.0.1:${peer}`, '--log-level', 'error',
    ];
    const etcd = new TestEtcd(endpoint, spawn(ETCD_BIN, args, { stdio: 'ignore' }), dir, args);
    await etcd.healthy();
    return etcd;
  }

  private async healthy(): Promise<void> {
    await waitFor(async () => {
      try {
        return (await fetch(`${this.endpoint}/health`)).ok;
      } catch {
        return false;
      }
    }, 'etcd answers /health', { timeoutMs: 20_000, intervalMs: 100 });
  }

  /** SIGKILL, keeping the data dir and the ports for restart() (an etcd outage). */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }

  /** Starts etcd again on its data dir and ports after kill(). */
  async restart(): Promise<void> {
    this.child = spawn(ETCD_BIN, this.args, { stdio: 'ignore' });
    await this.healthy();
  }

  async stop(): Promise<void> {
    await this.kill();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Copies the CA of one node's data dir into another's before its first start, so both serve certificates of one CA. */
export function shareCa(fromDataDir: string, toDataDir: string): void {
  const tlsDir = path.join(toDataDir, 'tls');
  fs.mkdirSync(tlsDir, { recursive: true, mode: 0o700 });
  fs.copyFileSync(path.join(fromDataDir, 'tls', 'ca.crt'), path.join(tlsDir, 'ca.crt'));
  fs.copyFileSync(path.join(fromDataDir, 'tls', 'ca.key'), path.join(tlsDir, 'ca.key'));
  fs.chmodSync(path.join(tlsDir, 'ca.key'), 0o600);
}
