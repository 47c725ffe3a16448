// `historian backup now|list|restore|download`: the backup routes of the service (WIRE.md part 2
// "Backup"), waiting on the process-log job with a progress bar, and a download that is checked
// against the sha256 the service recorded and can resume where an interrupted one stopped.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Option, type Command } from 'commander';
import { withTarget } from './accounts.js';
import { call, openRequest, refusal } from './http.js';
import { bytes, print, progress, table, when } from './output.js';
import { readSecretLine } from './prompt.js';
import { CommandError, type GlobalOptions, type OpenTarget } from './target.js';

const KINDS = ['all', 'sqlite', 'timeseries'];

interface FileInfo {
  file_name: string;
  kind: 'sqlite' | 'timeseries';
  size_bytes: number;
  created_ms: number;
  sha256: string;
  [more: string]: unknown;
}

async function listBackups(target: OpenTarget): Promise<FileInfo[]> {
  const body = (await call(target, 'GET', '/api/admin/backup/list')).body as { sqlite_backups: FileInfo[]; timeseries_backups: FileInfo[] };
  return [...body.sqlite_backups, ...body.timeseries_backups].sort((a, b) => b.created_ms - a.created_ms);
}

/** Follows a process-log job to its end; its failure is the command's. */
async function waitForJob(target: OpenTarget, jobId: unknown, label: string): Promise<Record<string, unknown>> {
  const bar = progress(label, 'items');
  try {
    for (;;) {
      const job = (await call(target, 'GET', `/svcapi/process-log/${encodeURIComponent(String(jobId))}`)).body as Record<string, unknown>;
      if (job.status === 'done') return job;
      if (job.status === 'failed') throw new CommandError(`${label} failed: ${String(job.error ?? job.message ?? 'no reason given')}`);
      bar.update(Math.round(Number(job.progress ?? 0) * 100), 100, String(job.message ?? ''));
      await sleep(250);
    }
  } finally {
    bar.finish();
  }
}

async function passphrase(wanted: boolean | undefined): Promise<string | undefined> {
  if (!wanted) return undefined;
  const value = await readSecretLine(process.stdin.isTTY ? 'Secrets passphrase: ' : null);
  if (!value) throw new CommandError('no passphrase given on standard input');
  return value;
}

export function backupCommands(program: Command, global: () => GlobalOptions): void {
  const backup = program.command('backup').description('take, list, restore and download backups');

  backup.command('now').description('take a backup now and wait for it')
    .addOption(new Option('--kind <kind>', 'what to back up').choices(KINDS).default('all'))
    .option('--secrets-passphrase-stdin', 'also keep secrets/ in the SQLite backup, encrypted with a passphrase read from standard input')
    .option('--no-wait', 'start it and print the job id without waiting')
    .action(async (opts: { kind: string; secretsPassphraseStdin?: boolean; wait: boolean }) => {
      const secrets = await passphrase(opts.secretsPassphraseStdin);
      await withTarget(global(), 'backup now', async (target) => {
        const before = new Set((await listBackups(target)).map((f) => f.file_name));
        const started = (await call(target, 'POST', '/api/admin/backup/run', { kind: opts.kind, ...(secrets ? { secrets_passphrase: secrets } : {}) })).body as { job_id: unknown };
        if (!opts.wait) return print(global().json, { job_id: started.job_id }, () => `started backup job ${String(started.job_id)}`);
        await waitForJob(target, started.job_id, 'backup');
        const made = (await listBackups(target)).filter((f) => !before.has(f.file_name));
        print(global().json, made, () => made.map((f) => `${f.file_name}  ${bytes(f.size_bytes)}  sha256 ${f.sha256}`).join('\n') || 'done (no new file listed)');
      });
    });

  backup.command('list').description('list the backups in the backup directory, newest first').action(async () => {
    await withTarget(global(), 'backup list', async (target) => {
      const files = await listBackups(target);
      print(global().json, files, () => table(files.map((f) => ({ ...f, size: bytes(f.size_bytes), created: when(f.created_ms) })), ['file_name', 'kind', 'size', 'created', 'points']));
    });
  });

  backup.command('restore').argument('<file_name>', 'a name from `backup list`').description('replace the live store (metadata or time series, by the file\'s kind) by a backup\'s')
    .option('--secrets-passphrase-stdin', 'also restore the secrets the backup keeps, with the passphrase read from standard input')
    .action(async (fileName: string, opts: { secretsPassphraseStdin?: boolean }) => {
      const secrets = await passphrase(opts.secretsPassphraseStdin);
      await withTarget(global(), 'backup restore', async (target) => {
        const info = (await listBackups(target)).find((f) => f.file_name === fileName);
        if (!info) throw new CommandError(`no backup ${JSON.stringify(fileName)} in the backup directory (historian backup list)`);
        const answer = (await call(target, 'POST', `/api/admin/backup/restore/${info.kind}`, { file_name: fileName, ...(secrets ? { secrets_passphrase: secrets } : {}) })).body;
        print(global().json, answer, () => `restored ${info.kind} from ${fileName}${answer && typeof answer === 'object' && 'message' in answer ? `: ${String(answer.message)}` : ''}`);
      });
    });

  backup.command('download').argument('<file_name>', 'a name from `backup list`').description('copy a backup off the service (resumes a partial download; checks its sha256)')
    .option('-o, --output <path>', 'file or folder to write to', '.')
    .action(async (fileName: string, opts: { output: string }) => {
      // A bare name from `backup list`: never a path that could write outside the chosen folder.
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(fileName) || fileName.includes('..')) throw new CommandError(`${JSON.stringify(fileName)} is not a backup's file name (historian backup list)`);
      await withTarget(global(), 'backup download', async (target) => {
        const out = fs.existsSync(opts.output) && fs.statSync(opts.output).isDirectory() ? path.join(opts.output, fileName) : opts.output;
        const result = await download(target, fileName, out);
        print(global().json, result, () => `${out}  ${bytes(result.size_bytes)}  sha256 ${result.sha256} (verified)${result.resumed_from > 0 ? `, resumed at ${bytes(result.resumed_from)}` : ''}`);
      });
    });
}

/**
 * Streams the backup into `<out>.partial` (continuing one left by an interrupted run, with a
 * Range request), checks the whole file's sha256 against the service's, then renames it to `out`.
 */
async function download(target: OpenTarget, fileName: string, out: string): Promise<{ file: string; size_bytes: number; sha256: string; resumed_from: number }> {
  const partial = `${out}.partial`;
  let offset = fs.existsSync(partial) ? fs.statSync(partial).size : 0;
  const route = `/api/admin/backup/download/${encodeURIComponent(fileName)}`;
  let res = await openRequest(target, 'GET', route, { headers: offset > 0 ? { range: `bytes=${offset}-` } : {} }).catch((err: Error) => Promise.reject(new CommandError(err.message)));
  if (res.statusCode === 416 || (offset > 0 && res.statusCode === 200)) {
    // The partial file is not a prefix of this backup (or the range is past its end): start over.
    res.resume();
    offset = 0;
    res = await openRequest(target, 'GET', route).catch((err: Error) => Promise.reject(new CommandError(err.message)));
  }
  if (res.statusCode !== 200 && res.statusCode !== 206) {
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    throw new CommandError(`download ${fileName}: ${res.statusCode} ${refusal(Buffer.concat(chunks).toString('utf8'))}`);
  }
  const expected = String(res.headers['x-historian-sha256'] ?? '');
  const total = offset + Number(res.headers['content-length'] ?? 0);
  const bar = progress(`download ${fileName}`);
  const sink = fs.createWriteStream(partial, { flags: offset > 0 ? 'a' : 'w', mode: 0o600 });
  let done = offset;
  res.on('data', (chunk: Buffer) => {
    done += chunk.length;
    bar.update(done, total);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      res.on('error', reject);
      sink.on('error', reject);
      sink.on('finish', resolve);
      res.pipe(sink);
    });
  } finally {
    bar.finish();
  }
  const sha256 = await hashFile(partial);
  if (expected && sha256 !== expected) {
    fs.rmSync(partial, { force: true });
    throw new CommandError(`download ${fileName}: sha256 ${sha256} differs from the service's ${expected}; the file was removed, run the command again`);
  }
  fs.renameSync(partial, out);
  return { file: out, size_bytes: fs.statSync(out).size, sha256, resumed_from: offset };
}

async function hashFile(file: string): Promise<string> {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
