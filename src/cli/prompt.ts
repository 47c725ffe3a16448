// Secrets typed or piped to the command (passwords, backup passphrases): never an argument, so they
// stay out of `ps` and shell history.

/** Lines of standard input already read (a second secret from one pipe comes from here). */
let piped: string[] | null = null;

async function pipedLines(): Promise<string[]> {
  if (piped) return piped;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  piped = Buffer.concat(chunks).toString('utf8').split(/\r?\n/);
  return piped;
}

/**
 * The next line of standard input. At a terminal, `question` is asked on stderr and what is typed
 * is not echoed; from a pipe (or `question` null) the next piped line is taken.
 */
export async function readSecretLine(question: string | null): Promise<string> {
  if (question === null || !process.stdin.isTTY) return (await pipedLines()).shift() ?? '';
  process.stderr.write(question);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.resume();
  let typed = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      const onData = (data: Buffer) => {
        for (const ch of data.toString('utf8')) {
          if (ch === '\r' || ch === '\n') {
            stdin.off('data', onData);
            return resolve(typed);
          }
          if (ch === '\u0003') {
            stdin.off('data', onData);
            return reject(new Error('interrupted'));
          }
          if (ch === '\u007f' || ch === '\b') typed = typed.slice(0, -1);
          else typed += ch;
        }
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stderr.write('\n');
  }
}
