#!/usr/bin/env node
// The `historian` command. Plain JavaScript so it runs without a build step; it loads the built
// program from dist/.
//
// To run the service, it first applies the memory settings the README recommends ("Operating"):
// V8's `--max-semi-space-size=1` and glibc's MALLOC_ARENA_MAX=2, MALLOC_TRIM_THRESHOLD_=65536,
// MALLOC_TOP_PAD_=0. glibc reads those variables once, when the process starts, and the main
// thread's young generation is sized at start too, so neither can be set from inside a running
// process: the launcher starts node again with them and stays as a thin parent (about 7 MiB of
// its own memory; the node binary's pages are shared) that forwards signals and mirrors the exit.
// A value the operator set already (environment, NODE_OPTIONS or node's own command line) wins;
// when all of them are in place (a unit that sets them), the program runs in this process.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

// One file holds the settings, so the benches (bench/service.ts) measure what this applies.
const SETTINGS = JSON.parse(fs.readFileSync(new URL('./memory-settings.json', import.meta.url), 'utf8'));
const MEMORY_ENV = SETTINGS.env;
const SEMI_SPACE_FLAG = '--max-semi-space-size';
const SEMI_SPACE = SETTINGS.nodeFlags.find((flag) => flag.startsWith(`${SEMI_SPACE_FLAG}=`));
/** Set in the relaunched child to the launcher's pid, so only that child takes the settings as applied. */
const MARKER = 'HISTORIAN_LAUNCHER_PID';
/**
 * Commands that run once and exit: they keep node's defaults, since a 1 MiB young generation
 * saves a long-running service memory but slows allocation-heavy batch work such as an import.
 */
const ONE_SHOT = new Set(['user', 'api-key', 'backup', 'import', 'export', 'check', 'help']);
const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP'];

const entry = new URL('../dist/src/cli/main.js', import.meta.url);
if (!fs.existsSync(entry)) {
  process.stderr.write('historian: not built; run `npm run build` (or `npm start` in a checkout)\n');
  process.exit(1);
}

const args = process.argv.slice(2);
/** The program's options that take a value (src/cli/main.ts), skipped when looking for the command word. */
const VALUE_OPTIONS = new Set(['--data-dir', '--url', '--api-key', '--ca-file', '--as']);
const command = args.find((arg, i) => !arg.startsWith('-') && !VALUE_OPTIONS.has(args[i - 1]));
const launchedByUs = process.env[MARKER] !== undefined && process.env[MARKER] === String(process.ppid);
delete process.env[MARKER]; // not passed on to anything the program starts

if (!launchedByUs && (command === undefined || !ONE_SHOT.has(command)) && !memorySettingsApplied()) relaunch();
else {
  if (launchedByUs) followLauncher();
  await import(entry.href);
}

function hasSemiSpaceFlag() {
  const nodeOptions = (process.env.NODE_OPTIONS ?? '').split(/\s+/);
  return [...process.execArgv, ...nodeOptions].some((arg) => arg === SEMI_SPACE_FLAG || arg.startsWith(`${SEMI_SPACE_FLAG}=`));
}

function memorySettingsApplied() {
  return Object.keys(MEMORY_ENV).every((name) => process.env[name] !== undefined) && hasSemiSpaceFlag();
}

function relaunch() {
  const env = { ...MEMORY_ENV, ...process.env, [MARKER]: String(process.pid) };
  const execArgv = hasSemiSpaceFlag() ? process.execArgv : [SEMI_SPACE, ...process.execArgv];
  // The IPC channel is only there so the child notices when this process is gone (kill -9).
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(import.meta.url), ...args], { env, stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
  // A terminal's Ctrl-C reaches both processes; the service takes a repeated signal as one.
  const forward = (signal) => child.kill(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  child.on('error', (err) => {
    process.stderr.write(`historian: cannot start ${process.execPath}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    // Die of the same signal, so a shell or systemd sees what happened to the service.
    for (const s of FORWARDED) process.off(s, forward);
    process.kill(process.pid, signal);
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] ?? 0)), 1000).unref();
  });
}

/** In the relaunched child: a launcher that vanished without a signal (kill -9) stops the service cleanly. */
function followLauncher() {
  if (!process.channel) return;
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  process.channel.unref();
}
