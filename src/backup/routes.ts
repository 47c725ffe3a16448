// /api/admin/backup/* (SPEC "Backup", WIRE.md part 2 "Backup"): status, list, config, run, and
// the two restores. Admin only unless compat.openMonitorAndBackup (as the legacy build had it).

import type { Route } from '../host/plugin.js';
import { downloadReply, streamFileRange } from '../http/byte-range.js';
import { S } from '../http/compile.js';
import type { JsonSchema } from '../http/route.js';
import { badRequest } from '../../shared/errors.js';
import { MIN_PASSPHRASE_LENGTH } from './secrets.js';
import type { BackupService } from './service.js';

/** Checked again by the service (secrets.ts), with the same 400 naming the field. */
const PASSPHRASE: JsonSchema = S.string({
  minLength: MIN_PASSPHRASE_LENGTH, maxLength: 1024,
  description: `At least ${MIN_PASSPHRASE_LENGTH} characters. Never stored or logged: keep it with the backups, apart from them.`,
});

const RESULT: JsonSchema = {
  type: ['object', 'null'],
  properties: { ok: S.boolean(), file_name: { type: ['string', 'null'] }, error: { type: ['string', 'null'] }, at_ms: S.integer(), duration_ms: S.integer() },
};
const FILE_INFO: JsonSchema = S.object(
  {
    file_name: S.string(), kind: S.string(), size_bytes: S.integer(), created_ms: S.integer(), sha256: S.string(), collections: S.integer(), points: S.integer(),
    blobs: S.integer({ description: 'timeseries: blob and attachment content files carried' }),
    secrets: S.boolean(),
  },
  ['file_name', 'kind', 'size_bytes', 'created_ms', 'sha256'],
);
const CONFIG: JsonSchema = S.object({ enabled: S.boolean(), interval_hours: { type: 'number' }, directory: S.string(), keep_sqlite: S.integer(), keep_timeseries: S.integer() });
const RESTORED: JsonSchema = S.object({
  success: S.boolean(), message: S.string(), job_id: S.string(), file_name: S.string(),
  secrets_restored: S.boolean(),
  restored: { type: 'object', properties: { kind: S.string(), tables: S.integer(), rows: S.integer(), collections: S.integer(), points: S.integer(), blobs: S.integer() } },
});

/** `open`: compat.openMonitorAndBackup, the routes answer without a token. */
export function backupRoutes(backups: BackupService, open: boolean): Route[] {
  const tag = 'Backup';
  const auth = open ? 'public' : 'admin';
  const who = (user: { sub: string } | null) => user?.sub ?? 'an unauthenticated caller (compat.openMonitorAndBackup)';
  const base = { auth, tag, maintenanceExempt: true } as const;
  const fileBody = S.object({ file_name: S.string() }, ['file_name']);
  return [
    {
      ...base, method: 'GET', path: '/api/admin/backup/status',
      summary: 'Whether a backup runs, the last results, the next scheduled one',
      responses: {
        200: {
          description: 'state',
          schema: S.object({ running: S.boolean(), last_backup_ms: { type: ['integer', 'null'] }, next_backup_ms: { type: ['integer', 'null'] }, last_sqlite: RESULT, last_timeseries: RESULT }),
        },
      },
      handler: () => ({ body: backups.status() }),
    },
    {
      // Admin whatever compat.openMonitorAndBackup says: a backup holds every account's password hash.
      ...base, auth: 'admin', method: 'GET', path: '/api/admin/backup/download/{file_name}', params: S.object({ file_name: S.string() }, ['file_name']),
      summary: 'Download a backup file (streamed; Range; its sha256 in X-Historian-Sha256 and the ETag)',
      description: '`file_name` as /list gives it; 400 for anything else (path separators, `..`), 404 when absent. The answer is the file as written, `application/octet-stream`, with `Content-Disposition: attachment`. Always needs an admin token, even with `compat.openMonitorAndBackup`.',
      responses: {
        200: { description: 'the backup file', contentType: 'application/octet-stream' },
        206: { description: 'the requested range', contentType: 'application/octet-stream' },
        304: { description: 'not modified (If-None-Match)' },
        400: { description: 'not a backup name' },
        404: { description: 'no such backup' },
        416: { description: 'no byte satisfies the range' },
      },
      handler: async (req) => {
        const name = req.params.file_name!;
        const { file, size, sha256 } = await backups.downloadable(name);
        return downloadReply(req.headers, {
          size, contentType: 'application/octet-stream', etag: `"${sha256}"`,
          headers: { 'content-disposition': `attachment; filename="${name}"`, 'x-historian-sha256': sha256 },
          stream: (start, end, out) => streamFileRange(file, start, end, out),
        });
      },
    },
    {
      ...base, method: 'GET', path: '/api/admin/backup/list',
      summary: 'Backups in the configured directory, newest first',
      responses: { 200: { description: 'backups', schema: S.object({ sqlite_backups: S.array(FILE_INFO), timeseries_backups: S.array(FILE_INFO) }) } },
      handler: async () => ({ body: await backups.list() }),
    },
    {
      ...base, method: 'GET', path: '/api/admin/backup/config',
      summary: 'The backup configuration',
      responses: { 200: { description: 'config', schema: CONFIG } },
      handler: () => ({ body: backups.config.get() }),
    },
    {
      ...base, method: 'PUT', path: '/api/admin/backup/config',
      summary: 'Change the backup configuration (omitted fields keep their values); applied at once',
      description: '400 naming a bad or unknown field. Kept in the data dir (backup-config.json), not in the metadata store.',
      body: { type: 'object', additionalProperties: true },
      responses: { 200: { description: 'the new config', schema: S.object({ success: S.boolean(), config: CONFIG }) } },
      handler: (req) => ({ body: { success: true, config: backups.updateConfig(req.body) } }),
    },
    {
      ...base, method: 'POST', path: '/api/admin/backup/run',
      summary: 'Start a backup now (sqlite, timeseries or all); answers its job id at once',
      description:
        '409 while a backup or restore runs. Progress in the status and the process log. With `secrets_passphrase` the sqlite backup also carries, ' +
        "sealed with it, the secrets its rows need on another host (secrets/connections.key, the OPC UA application certificate and key); 400 with kind timeseries. A timeseries backup carries the blob and attachment content files.",
      body: S.object({ kind: S.string({ enum: ['sqlite', 'timeseries', 'all'], default: 'all' }), secrets_passphrase: PASSPHRASE }, [], { additionalProperties: false }),
      responses: { 200: { description: 'started', schema: S.object({ success: S.boolean(), job_id: S.string() }) }, 400: { description: 'a bad field' }, 409: { description: 'busy' } },
      handler: (req) => {
        const body = req.body as { kind: 'sqlite' | 'timeseries' | 'all'; secrets_passphrase?: string };
        return { body: { success: true, job_id: backups.run(body.kind, who(req.user), body.secrets_passphrase) } };
      },
    },
    {
      ...base, method: 'POST', path: '/api/admin/backup/restore/sqlite',
      summary: 'Replace the metadata store by a sqlite backup; answers when done',
      description:
        'Verified first (checksum, integrity_check, schema version): a file that fails is 400 and nothing changes. Other mutating requests answer 503 meanwhile. ' +
        'With `secrets_passphrase`, the secrets the backup carries are restored with the rows and used at once (`secrets_restored: true`); a wrong passphrase, or one given for a backup without secrets, is 400 before anything changes. ' +
        'Without it, a backup with secrets restores the rows only (`secrets_restored: false`).',
      body: S.object({ file_name: S.string(), secrets_passphrase: PASSPHRASE }, ['file_name']),
      responses: { 200: { description: 'restored', schema: RESTORED }, 400: { description: 'bad name, failed verification or a wrong secrets_passphrase' }, 404: { description: 'no such backup' }, 409: { description: 'busy' } },
      handler: async (req) => {
        const body = req.body as { file_name: string; secrets_passphrase?: string };
        return { body: await backups.restoreSqlite(body.file_name, who(req.user), body.secrets_passphrase) };
      },
    },
    {
      ...base, method: 'POST', path: '/api/admin/backup/restore/timeseries',
      summary: 'Replace the time-series store by a timeseries backup; answers when done',
      description: 'Unpacked and verified against its manifest first: a file that fails is 400 and nothing changes. From its first check to its end, changes to the time series (writes, seals, collection changes, org/site/unit moves and deletes that move collection folders) answer 503 with Retry-After; queries do only during the swap; logins and metadata go on. A crash mid-restore is finished or undone at the next start. The blob and attachment content files it carries are added to the live ones.',
      body: fileBody,
      responses: { 200: { description: 'restored', schema: RESTORED }, 400: { description: 'bad name or failed verification' }, 404: { description: 'no such backup' }, 409: { description: 'busy' } },
      handler: async (req) => {
        const body = req.body as { file_name: string; secrets_passphrase?: unknown };
        if (body.secrets_passphrase !== undefined) throw badRequest('secrets_passphrase goes with /restore/sqlite: the secrets travel in the sqlite backup');
        return { body: await backups.restoreTimeseries(body.file_name, who(req.user)) };
      },
    },
  ];
}
