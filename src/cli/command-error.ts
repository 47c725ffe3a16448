/** A failure the command reports as one line on stderr and exit code 1 (src/cli/main.ts). */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}
