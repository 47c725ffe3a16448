// What the packaging tests look at in a running `historian`: the real service process behind the
// launcher (its environment and command line in /proc), the data dir's lock, and a write read back.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { TestService } from '../api/harness.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const LAUNCHER = path.join(ROOT, 'bin', 'historian.js');

/** The memory settings the README recommends, as the launcher applies them. */
export const MEMORY_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_TRIM_THRESHOLD_: '65536', MALLOC_TOP_PAD_: '0' };

export interface ProcessInfo {
  ppid: number;
  argv: string[];
  env: Record<string, string>;
}

export function processInfo(pid: number): ProcessInfo {
  const split = (file: string) => fs.readFileSync(`/proc/${pid}/${file}`, 'utf8').split('\0').filter(Boolean);
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which is in parentheses and may hold spaces: state, ppid, ...
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  const env = Object.fromEntries(split('environ').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  return { ppid, argv: split('cmdline'), env };
}

export const isRunning = (pid: number) => fs.existsSync(`/proc/${pid}`);

/** The pid the service logged as listening: the process that serves, behind the launcher. */
export function servicePid(svc: TestService): number {
  const line = svc.logs().find((l) => l.msg === 'listening');
  assert.ok(line, 'the service logged its listening line');
  return line.pid as number;
}

/** Whether another process holds the data dir's lock (service.lock, as src/data-dir.ts takes it). */
export function lockHeld(dataDir: string): boolean {
  const db = new Database(path.join(dataDir, 'service.lock'), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return false;
  } catch (err) {
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw err;
  } finally {
    db.close();
  }
}

export const SCOPE = { organization: 'plant', site: 'north', unit: 'boiler-1', grid: 'main' };
export const T0 = Date.UTC(2026, 0, 10);
export const POINTS = [
  [T0, 20.5],
  [T0 + 1000, 21.25],
  [T0 + 2000, -3],
];

export async function createAndWrite(svc: TestService, token: string): Promise<void> {
  const created = await svc.post('/svcapi/create_collection', SCOPE, token);
  assert.equal(created.body?.success, true, created.text);
  const written = await svc.post('/svcapi/write', { ...SCOPE, tags: { 'TI-101': POINTS } }, token);
  assert.deepEqual(written.body, { success: true, points: POINTS.length }, written.text);
}

export async function queryBack(svc: TestService, token: string): Promise<unknown> {
  const scope = Object.entries(SCOPE).map(([k, v]) => `&${k}=${v}`).join('');
  const res = await svc.get(`/svcapi/fast_query?tags=TI-101&start=${T0}&end=${T0 + 2000}${scope}`, token);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Runs a program to its end; rejects with its output when it fails. */
export function run(program: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { ...options, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${program} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve({ stdout, stderr });
    });
  });
}

/**
 * Unsets what npm puts in the environment of the script running the tests (`npm test`) that
 * would steer a nested npm or the service: the running package and script, and the prefixes
 * (npm_config_local_prefix names this checkout). The user's own npm settings (registry, cache) stay.
 */
export function envWithoutNpm(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  const steering = /^npm_(package_|lifecycle_|command$|config_(prefix|local_prefix|global_prefix|call)$)/;
  const env: Record<string, string | undefined> = {};
  for (const key of Object.keys(process.env)) if (steering.test(key)) env[key] = undefined;
  return { ...env, ...extra };
}

export function withoutUndefined(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as NodeJS.ProcessEnv;
}
