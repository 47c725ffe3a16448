// The `historian` command (WIRE.md part 3 "Operations"): `serve` (the default) runs the service;
// the others manage a data dir through the service that holds it, or, when none does, through the
// stores the command opens itself (target.ts). Exit codes scripts can trust: 0 done, 1 failed
// (one line on stderr saying why), 2 a usage error.

import { Command, CommanderError, Option } from 'commander';
import { VERSION, serve } from '../main.js';
import { flushLogs } from '../log.js';
import { apiKeyCommands, userCommands } from './accounts.js';
import { backupCommands } from './backups.js';
import { checkCommand, dataCommands } from './data.js';
import { CommandError } from './command-error.js';
import type { GlobalOptions } from './target.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Set once `serve` runs: the process then lives until a signal stops the service. */
let serving = false;

/** The whole command line; `run` parses and runs one. */
export function buildProgram(): Command {
  const program = new Command('historian')
    .description('Industrial time-series historian: run the service, or manage its data dir.')
    .version(`historian ${VERSION}`, '-v, --version', 'print the version and exit')
    .helpOption('-h, --help', 'print help for the command and exit')
    .addOption(new Option('--data-dir <dir>', 'the data dir (else HISTORIAN_DATA_DIR, else the config\'s dataDir)'))
    .addOption(new Option('--url <url>', 'manage the service at this URL (another host) instead of the local data dir\'s'))
    .addOption(new Option('--api-key <key>', 'the API key for --url (else HISTORIAN_API_KEY)'))
    .addOption(new Option('--ca-file <file>', 'the CA to trust for --url (the service\'s historian-ca.crt)'))
    .addOption(new Option('--as <email>', 'the account a local command acts as (default: the first admin, auth.adminEmail)'))
    .addOption(new Option('--json', 'print results as JSON, for scripts'));
  const global = (): GlobalOptions => program.opts<GlobalOptions>();

  program.command('serve')
    .description('run the service (HTTPS on server.port, data under the data dir) until SIGTERM/SIGINT')
    .action(async () => {
      const dataDir = global().dataDir;
      if (dataDir) process.env.HISTORIAN_DATA_DIR = dataDir;
      serving = true;
      await serve();
    });
  userCommands(program, global);
  apiKeyCommands(program, global);
  backupCommands(program, global);
  dataCommands(program, global);
  checkCommand(program, global);
  stopOnUsageErrors(program);
  return program;
}

/** The program and every subcommand stop on a usage error with one `historian:` line (exitOverride is per command). */
function stopOnUsageErrors(command: Command): void {
  command.exitOverride();
  command.showHelpAfterError('(try --help)');
  command.configureOutput({ writeErr: (text) => process.stderr.write(text.startsWith('error: ') ? `historian: ${text.slice(7)}` : text) });
  for (const sub of command.commands) stopOnUsageErrors(sub);
}

/**
 * `serve` when the line names no command (`historian`, `historian --data-dir D`), so a word that
 * is no command is still refused as one.
 */
function withDefaultCommand(program: Command, argv: readonly string[]): string[] {
  const takesValue = new Set(program.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter(Boolean) as string[]));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') break;
    if (!arg.startsWith('-')) return [...argv];
    if (arg === '-h' || arg === '--help' || arg === '-v' || arg === '--version') return [...argv];
    if (takesValue.has(arg)) i++;
  }
  return [...argv, 'serve'];
}

/** Runs one command line; resolves with the exit code (serve resolves once it is serving). */
export async function run(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(withDefaultCommand(program, argv), { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT_OK;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT_OK;
      return EXIT_USAGE;
    }
    if (err instanceof CommandError) {
      process.stderr.write(`historian: ${err.message}\n`);
      return EXIT_FAILED;
    }
    flushLogs();
    process.stderr.write(`historian: failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    return EXIT_FAILED;
  }
}

// A reader that went away (`historian user list | head -1`) must not turn into a crash.
process.stdout.on('error', () => {});
run(process.argv.slice(2)).then((code) => {
  if (serving && code === EXIT_OK) return; // the server keeps the process up until SIGTERM/SIGINT
  flushLogs();
  process.exit(code);
});
