// `historian user …` and `historian api-key …`: the same routes an admin would call
// (`/svcapi/users`, `/svcapi/admin/user/delete`, `/svcapi/api_keys`), so the same checks, hashing
// and audit apply whether the service runs or the command opened the data dir itself.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { parseTimeParam, TIME_PARAM_FORMS } from '../http/time-param.js';
import { checkEmail } from '../meta/email.js';
import { call } from './http.js';
import { print, table, when } from './output.js';
import { readSecretLine } from './prompt.js';
import { CommandError, commandConfig, openTarget, type GlobalOptions, type OpenTarget } from './target.js';

const ROLES = ['admin', 'read-write', 'read-only'];

interface PasswordOptions {
  passwordStdin?: boolean;
  generate?: boolean;
}

/** Runs `body` against the target the global options name, closing it whatever happens. */
export async function withTarget<T>(global: GlobalOptions, command: string, body: (target: OpenTarget) => Promise<T>): Promise<T> {
  const target = await openTarget(global, command);
  try {
    return await body(target);
  } finally {
    await target.close();
  }
}

/** The new password: from stdin, generated (then printed once), or asked twice at the terminal. */
async function newPassword(opts: PasswordOptions): Promise<{ password: string; generated: boolean }> {
  if (opts.generate && opts.passwordStdin) throw new CommandError('give --generate or --password-stdin, not both');
  if (opts.generate) return { password: crypto.randomBytes(18).toString('base64url'), generated: true };
  if (opts.passwordStdin || !process.stdin.isTTY) {
    const password = await readSecretLine(null);
    if (!password) throw new CommandError('no password on standard input');
    return { password, generated: false };
  }
  const first = await readSecretLine('New password: ');
  const again = await readSecretLine('Again: ');
  if (first !== again) throw new CommandError('the two passwords differ; nothing was changed');
  if (!first) throw new CommandError('an empty password; nothing was changed');
  return { password: first, generated: false };
}

async function findUser(target: OpenTarget, email: string): Promise<{ id: string; email: string; role: string }> {
  const checked = checkEmail(email);
  if (!checked.ok) throw new CommandError(`${JSON.stringify(email)} is not an account's email: ${checked.error}`);
  const filter = { where: { email: checked.email }, limit: 1 };
  const found = await call(target, 'GET', `/svcapi/users?filter=${encodeURIComponent(JSON.stringify(filter))}`);
  const row = Array.isArray(found.body) ? found.body[0] : undefined;
  if (!row) throw new CommandError(`no account ${JSON.stringify(email)}`);
  return row;
}

/**
 * The first admin's generated password file names the password it was made with; once that
 * password changes the file only misleads, so the command that changed it removes it.
 */
function retireAdminPasswordFile(global: GlobalOptions, email: string): string | null {
  const file = path.join(commandConfig(global).dataDir, 'secrets', 'admin-password.txt');
  try {
    const first = fs.readFileSync(file, 'utf8').split('\n')[0]?.trim().toLowerCase();
    if (first !== email.trim().toLowerCase()) return null;
    fs.rmSync(file);
    return file;
  } catch {
    return null;
  }
}

export function userCommands(program: Command, global: () => GlobalOptions): void {
  const user = program.command('user').description('manage accounts (add, passwd, list, delete)');

  user.command('list').description('list accounts: id, email, role').action(async () => {
    await withTarget(global(), 'user list', async (target) => {
      const rows = (await call(target, 'GET', '/svcapi/users')).body as Array<Record<string, unknown>>;
      const users = rows.map((r) => ({ id: r.id, email: r.email, role: r.role }));
      print(global().json, users, () => table(users, ['id', 'email', 'role']));
    });
  });

  user.command('add').argument('<email>').description('create an account')
    .addOption(new Option('--role <role>', 'the account\'s role').choices(ROLES).default('read-write'))
    .option('--password-stdin', 'read the password from the first line of standard input')
    .option('--generate', 'generate a random password and print it once')
    .action(async (email: string, opts: PasswordOptions & { role: string }) => {
      const { password, generated } = await newPassword(opts);
      await withTarget(global(), 'user add', async (target) => {
        const made = (await call(target, 'POST', '/svcapi/users', { email, password, role: opts.role })).body as Record<string, unknown>;
        const out = { id: made.id, email: made.email, role: made.role, ...(generated ? { password } : {}) };
        print(global().json, out, () => `added ${out.email} (${out.role}, id ${out.id})${generated ? `\npassword: ${password}` : ''}`);
      });
    });

  user.command('passwd').argument('<email>').description('set an account\'s password (every older token of it stops working)')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .option('--generate', 'generate a random password and print it once')
    .action(async (email: string, opts: PasswordOptions) => {
      const { password, generated } = await newPassword(opts);
      await withTarget(global(), 'user passwd', async (target) => {
        const row = await findUser(target, email);
        await call(target, 'PUT', `/svcapi/users/${encodeURIComponent(row.id)}`, { password });
        const retired = target.via === 'url' ? null : retireAdminPasswordFile(global(), row.email);
        const out = { email: row.email, ...(generated ? { password } : {}), ...(retired ? { removed: retired } : {}) };
        print(global().json, out, () => [
          `password of ${row.email} changed`,
          ...(generated ? [`password: ${password}`] : []),
          ...(retired ? [`removed ${retired} (it held the old password)`] : []),
        ].join('\n'));
      });
    });

  user.command('delete').argument('<email>').description('delete an account (its tokens and API keys stop working at once)')
    .action(async (email: string) => {
      await withTarget(global(), 'user delete', async (target) => {
        await call(target, 'POST', '/svcapi/admin/user/delete', { email });
        print(global().json, { deleted: email }, () => `deleted ${email}`);
      });
    });
}

export function apiKeyCommands(program: Command, global: () => GlobalOptions): void {
  const key = program.command('api-key').description('manage API keys (create, list, revoke)');

  key.command('create').description('create an API key; the key is printed once')
    .requiredOption('--name <name>', 'what the key is for, e.g. grafana')
    .addOption(new Option('--role <role>', 'the key\'s role (default: the account\'s)').choices(ROLES))
    .option('--expires <when>', 'epoch ms, ISO 8601, or a duration from now: 90d, 12h, 30m')
    .option('--user <email>', 'the account the key belongs to (default: the first admin, or --as)')
    .action(async (opts: { name: string; role?: string; expires?: string; user?: string }) => {
      const expires = opts.expires === undefined ? undefined : expiryOf(opts.expires);
      await withTarget(global(), 'api-key create', async (target) => {
        // Keys do not make keys: a key is made by its owner's token, which the data dir's secret signs.
        if (target.via === 'url') throw new CommandError('API keys are made on the service host (as the account that owns the data dir), or with POST /svcapi/api_keys and a login token: a key cannot make keys');
        const acting = opts.user ? { ...target, authorization: `Bearer ${target.tokenFor(opts.user)}` } : target;
        const made = (await call(acting, 'POST', '/svcapi/api_keys', { name: opts.name, ...(opts.role ? { role: opts.role } : {}), ...(expires !== undefined ? { expires_ms: expires } : {}) })).body;
        // Only the key on stdout (`KEY=$(historian api-key create --name x)`); what it is on stderr.
        print(global().json, made, () => made.key);
        if (!global().json) process.stderr.write(`API key ${made.id} (${made.role}, expires ${made.expires_ms === null ? 'never' : when(made.expires_ms)}): shown this once\n`);
      });
    });

  key.command('list').description('list API keys (never the keys themselves)').action(async () => {
    await withTarget(global(), 'api-key list', async (target) => {
      const keys = (await call(target, 'GET', '/svcapi/api_keys')).body as Array<Record<string, unknown>>;
      print(global().json, keys, () => table(keys.map((k) => ({ ...k, created: when(k.created_ms), expires: k.expires_ms === null ? 'never' : when(k.expires_ms), last_used: when(k.last_used_ms) })), ['id', 'name', 'role', 'prefix', 'owner', 'created', 'expires', 'last_used']));
    });
  });

  key.command('revoke').argument('<id>').description('revoke an API key at once').action(async (id: string) => {
    await withTarget(global(), 'api-key revoke', async (target) => {
      await call(target, 'DELETE', `/svcapi/api_keys/${encodeURIComponent(id)}`);
      print(global().json, { revoked: id }, () => `revoked key ${id}`);
    });
  });
}

/**
 * `--expires` as epoch ms: what the service's time parameters take (epoch ms, ISO 8601 with an
 * offset, now+30d; http/time-param.ts), or a bare duration from now (90d, 12h).
 */
function expiryOf(text: string): number {
  const now = Date.now();
  const given = text.trim();
  const parsed = parseTimeParam(given, now);
  const value = parsed.ok ? parsed : parseTimeParam(`now+${given}`, now);
  if (!value.ok) throw new CommandError(`--expires ${JSON.stringify(text)}: give a duration like 90d, or ${TIME_PARAM_FORMS}`);
  return value.ms;
}
