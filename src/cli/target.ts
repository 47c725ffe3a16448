// Which service a command talks to, and as whom (WIRE.md part 3 "Operations"):
// - `--url` (another host): that URL with an API key (`--api-key` / HISTORIAN_API_KEY);
// - else the data dir's holder, found through its lock (`service.json` names its address), with
//   an operator token signed by the data dir's own secret (operator-token.ts);
// - else no one holds the data dir: the command starts the service's stores itself on a loopback
//   port (taking the same lock) and talks to that, so every command goes through the same routes,
//   checks and answers whether the service runs or not.

import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { probeDataDir } from '../data-dir.js';
import { createLogger, flushLogs } from '../log.js';
import { MAINTENANCE_PLUGINS, startService, type RunningService } from '../main.js';
import { secretFromFile, signOperatorToken } from '../operator-token.js';
import { StartupError } from '../startup.js';
import { CommandError } from './command-error.js';
import type { Target } from './target-types.js';

export type { Target };

export { CommandError };

/** The options every command takes (src/cli/main.ts declares them). */
export interface GlobalOptions {
  dataDir?: string;
  url?: string;
  apiKey?: string;
  caFile?: string;
  /** The account an operator token names; the first admin (auth.adminEmail) by default. */
  as?: string;
  json?: boolean;
}

export interface OpenTarget extends Target {
  /** How the command reached the data: `service` (the running one), `data-dir` (started here), `url`. */
  readonly via: 'service' | 'data-dir' | 'url';
  /** Signs another operator token for `email` (not with --url). */
  tokenFor(email: string): string;
  close(): Promise<void>;
}

/** The settings as `serve` reads them, with `--data-dir` first. */
export function commandConfig(opts: GlobalOptions): Config {
  if (opts.dataDir) process.env.HISTORIAN_DATA_DIR = path.resolve(opts.dataDir);
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) throw new CommandError(err.message);
    throw err;
  }
}

/** Opens the target a command runs against; `command` names it in the audit line of an operator token. */
export async function openTarget(opts: GlobalOptions, command: string): Promise<OpenTarget> {
  if (opts.url) return remoteTarget(opts);
  const config = commandConfig(opts);
  const state = fs.existsSync(config.dataDir) ? probeDataDir(config.dataDir) : { held: false as const };
  if (state.held) {
    if (!state.address) {
      throw new CommandError(`the data dir ${config.dataDir} is held by ${state.pid ? `process ${state.pid}` : 'another process'}, which does not answer yet (starting, or another historian command); try again`);
    }
    const ca = state.address.caFile ? readOrFail(state.address.caFile, 'the service\'s CA') : undefined;
    return localTarget(config, opts, command, state.address.url, ca, 'service', async () => {});
  }
  if (config.cluster.enabled) {
    throw new CommandError(`the data dir ${config.dataDir} is a cluster node's and no service holds it: start it (historian serve), or use --url with an API key`);
  }
  // Nobody holds the data dir: run its stores here, on a loopback port, logging to stderr.
  const level = process.env.HISTORIAN_LOG_LEVEL ? config.log.level : 'warn';
  const own: Config = { ...config, log: { ...config.log, level, toStderr: true }, server: { ...config.server, host: '127.0.0.1', port: 0 } };
  const log = createLogger(level, config.log.format, 2);
  let service: RunningService;
  try {
    service = await startService(own, log, process.env, { plugins: MAINTENANCE_PLUGINS });
  } catch (err) {
    flushLogs();
    if (err instanceof StartupError || err instanceof ConfigError) throw new CommandError(err.message);
    throw err;
  }
  const address = probeDataDir(config.dataDir);
  const url = address.held && address.address ? address.address.url : `https://127.0.0.1:${service.port}`;
  const caFile = address.held && address.address?.caFile;
  const ca = caFile ? fs.readFileSync(caFile) : undefined;
  return localTarget(config, opts, command, url, ca, 'data-dir', async () => {
    await service.stop();
    flushLogs();
  });
}

function localTarget(config: Config, opts: GlobalOptions, command: string, url: string, ca: Buffer | undefined, via: 'service' | 'data-dir', stop: () => Promise<void>): OpenTarget {
  const secret = signingSecret(config);
  const agent = new https.Agent({ ca, keepAlive: true, maxSockets: 8 });
  const tokenFor = (email: string) => signOperatorToken(secret, email, { command, pid: process.pid });
  return {
    baseUrl: url,
    authorization: `Bearer ${tokenFor(opts.as ?? config.auth.adminEmail)}`,
    agent,
    via,
    tokenFor,
    async close() {
      agent.destroy();
      await stop();
    },
  };
}

function remoteTarget(opts: GlobalOptions): OpenTarget {
  const key = opts.apiKey ?? process.env.HISTORIAN_API_KEY;
  if (!key) throw new CommandError('--url needs an API key: --api-key or HISTORIAN_API_KEY');
  let url: URL;
  try {
    url = new URL(opts.url!);
  } catch {
    throw new CommandError(`--url ${JSON.stringify(opts.url)} is not a URL (https://host:3030)`);
  }
  if (url.protocol !== 'https:') throw new CommandError('--url must be https://');
  const ca = opts.caFile ? readOrFail(opts.caFile, '--ca-file') : undefined;
  const agent = new https.Agent({ ca, keepAlive: true, maxSockets: 8 });
  return {
    baseUrl: url.origin,
    authorization: `Bearer ${key}`,
    agent,
    via: 'url',
    tokenFor() {
      throw new CommandError('acting as another account needs the data dir (run on the service host as the account that owns it), not --url');
    },
    async close() {
      agent.destroy();
    },
  };
}

/**
 * The secret tokens are signed with: a cluster's shared one, else the data dir's. Reading it is
 * the proof that the command runs as the account that owns the data dir.
 */
function signingSecret(config: Config): Buffer {
  const file = config.cluster.enabled && config.cluster.secretFile ? config.cluster.secretFile : path.join(config.dataDir, 'secrets', 'jwt.secret');
  const secret = secretFromFile(readOrFail(file, 'the signing secret'));
  if (secret.length < 32) throw new CommandError(`${file} holds no usable secret`);
  return secret;
}

function readOrFail(file: string, what: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') {
      throw new CommandError(`cannot read ${what} (${file}): run as the account that owns the data dir, or use --url with an API key`);
    }
    throw new CommandError(`cannot read ${what} (${file}): ${code ?? (err as Error).message}`);
  }
}
