// A real etcd (Debian's etcd-server) on loopback ports, in a temp dir, for the cluster tests.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../support/ports.js';
import { waitFor } from '../support/wait-for.js';

export const ETCD_BIN = '/usr/bin/etcd';

export class TestEtcd {
  private constructor(readonly endpoint: string, private readonly child: ChildProcess, private readonly dir: string) {}

  static async start(): Promise<TestEtcd> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'etcd-test-'));
    const client = await freePort();
    const peer = await freePort();
    const endpoint = `http://127.0.0.1:${client}`;
    const child = spawn(ETCD_BIN, [
      '--name', 'test', '--data-dir', dir,
      '--listen-client-urls', endpoint, '--advertise-client-urls', endpoint,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `test=http://127.0.0.1:${peer}`, '--log-level', 'error',
    ], { stdio: 'ignore' });
    const etcd = new TestEtcd(endpoint, child, dir);
    await waitFor(async () => {
      try {
        return (await fetch(`${endpoint}/health`)).ok;
      } catch {
        return false;
      }
    }, 'etcd answers /health', { timeoutMs: 20_000, intervalMs: 100 });
    return etcd;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGKILL');
      await exited;
    }
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
