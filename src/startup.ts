// The command line, and the error a start fails with: StartupErrors are printed as one line
// naming the problem (main.ts), never a stack trace. The data dir's own checks and lock are in
// data-dir.ts.

export class StartupError extends Error {
  override readonly name = 'StartupError';
}

export const USAGE = `Usage: node dist/src/main.js [--help] [--version]

Starts the historian: HTTPS on server.port (3030), data under dataDir (./data).
Settings: config/default.json, then the JSON file named by HISTORIAN_CONFIG, then
HISTORIAN_PORT, HISTORIAN_DATA_DIR, HISTORIAN_CONFIG, HISTORIAN_LOG_LEVEL,
HISTORIAN_LOG_FORMAT, HISTORIAN_ADMIN_EMAIL, HISTORIAN_ADMIN_PASSWORD (see README.md).

  --help      print this and exit
  --version   print the version and exit
`;

/** What the command line asks for; anything else is a StartupError. */
export function parseArgs(argv: readonly string[]): 'run' | 'help' | 'version' {
  if (argv.length === 0) return 'run';
  if (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h')) return 'help';
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) return 'version';
  throw new StartupError(`unknown argument ${JSON.stringify(argv.join(' '))}; try --help`);
}
