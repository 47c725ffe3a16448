// Runs the real `historian` command (dist/src/cli/main.js) as a child process, with the settings
// a test service of test/api/harness.ts uses, and collects its exit code and output.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from '../api/harness.js';

export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (for --json runs); undefined when it is not JSON. */
  json: any;
}

export interface CliOptions {
  /** Written to standard input, then closed (no input: closed at once). */
  input?: string;
  env?: Record<string, string | undefined>;
}

/** The settings file test/api/harness.ts writes beside a data dir. */
export function settingsFileOf(dataDir: string): string {
  return path.join(dataDir, '..', `${path.basename(dataDir)}.config.json`);
}

/** `historian <args>` on `dataDir`, as the account owning it, with the test service's settings. */
export function historian(dataDir: string, args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  return run(['--data-dir', dataDir, ...args], {
    ...opts,
    env: { HISTORIAN_ADMIN_EMAIL: ADMIN_EMAIL, HISTORIAN_ADMIN_PASSWORD: ADMIN_PASSWORD, HISTORIAN_CONFIG: settingsFileOf(dataDir), ...opts.env },
  });
}

/** `historian <args>` with only the given environment added. */
export function run(args: readonly string[], opts: CliOptions = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...process.env, HISTORIAN_PORT: "0", ...opts.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
    child.stdin.end(opts.input ?? '');
  });
}
