// Backup files in the configured directory: one file per backup (`sqlite-<time>.sqlite`, a
// SQLite database; `timeseries-<time>.tar`, a tar with its manifest), each with a sidecar
// `<file>.json` holding its file info (WIRE.md part 2 "Backup"), so listing never reads a
// backup whole. Names from requests are checked here before they touch the filesystem.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { readSealedSecrets } from '../meta/backup-secrets.js';
import { badRequest, notFound } from '../../shared/errors.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';

export type BackupKind = 'sqlite' | 'timeseries';

export interface BackupFileInfo {
  file_name: string;
  kind: BackupKind;
  size_bytes: number;
  created_ms: number;
  sha256: string;
  collections?: number;
  points?: number;
  /** Timeseries: the blob and attachment content files it carries. */
  blobs?: number;
  /** Sqlite: true when it carries the service's secrets, sealed with a passphrase (secrets.ts). */
  secrets?: boolean;
}

const NAME = /^(sqlite|timeseries)-(\d{8}T\d{9}Z)(?:-(\d+))?\.(sqlite|tar)$/;
const EXTENSION: Record<BackupKind, string> = { sqlite: 'sqlite', timeseries: 'tar' };

/** A new backup file name of `kind` in `dir`, by the UTC time (a counter when two fall in one millisecond). */
export function newBackupName(dir: string, kind: BackupKind, now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:.]/g, '');
  for (let n = 0; ; n++) {
    const name = `${kind}-${stamp}${n > 0 ? `-${n}` : ''}.${EXTENSION[kind]}`;
    if (!fs.existsSync(path.join(dir, name)) && !fs.existsSync(path.join(dir, `${name}.partial`))) return name;
  }
}

/** The path of backup `fileName` of `kind` in `dir`: 400 for a name that is not a backup name of that kind, 404 when absent. */
export function backupPath(dir: string, fileName: unknown, kind: BackupKind): string {
  if (typeof fileName !== 'string' || fileName === '') throw badRequest('file_name must be the name of a backup, as /list gives it');
  if (fileName.includes('/') || fileName.includes('\\') || fileName.includes('..') || fileName.includes('\0')) {
    throw badRequest('file_name must be a bare file name from /list (no path separators or "..")');
  }
  const match = NAME.exec(fileName);
  if (!match) throw badRequest(`file_name ${JSON.stringify(fileName)} is not a backup name`);
  if (match[1] !== kind) throw badRequest(`${fileName} is a ${match[1]} backup, not a ${kind} one`);
  const file = path.join(dir, fileName);
  if (!fs.existsSync(file)) throw notFound(`backup ${fileName} not found in ${dir}`);
  return file;
}

/** The path of backup `fileName` of either kind in `dir` (400 for what is not a backup name, 404 when absent), and its kind. */
export function anyBackupPath(dir: string, fileName: unknown): { file: string; kind: BackupKind } {
  const kind = typeof fileName === 'string' ? NAME.exec(fileName)?.[1] : undefined;
  const asKind: BackupKind = kind === 'timeseries' ? 'timeseries' : 'sqlite';
  return { file: backupPath(dir, fileName, asKind), kind: asKind };
}

export async function sha256Of(file: string): Promise<string> {
  const hash = crypto.createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Writes the sidecar of a finished backup. */
export function writeSidecar(dir: string, info: BackupFileInfo): void {
  const file = path.join(dir, `${info.file_name}.json`);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(info)}\n`, { mode: PRIVATE_FILE_MODE });
  fs.renameSync(tmp, file);
}

/** The sidecar of backup `fileName`, or null when it is missing or unreadable. */
export function readSidecar(dir: string, fileName: string): BackupFileInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(path.join(dir, `${fileName}.json`), 'utf8')) as BackupFileInfo;
    return info && info.file_name === fileName && typeof info.sha256 === 'string' ? info : null;
  } catch {
    return null;
  }
}

/**
 * The backups of each kind in `dir`, newest first. A backup file without a sidecar (one copied in
 * by hand, or downloaded and brought to another host) is listed with the info its name, size and
 * content give (the manifest of a tar; whether a database carries secrets), its checksum
 * computed once and kept.
 */
export async function listBackups(dir: string): Promise<Record<BackupKind, BackupFileInfo[]>> {
  const out: Record<BackupKind, BackupFileInfo[]> = { sqlite: [], timeseries: [] };
  let names: string[];
  try {
    names = await fs.promises.readdir(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const match = NAME.exec(name);
    if (!match) continue;
    const kind = match[1] as BackupKind;
    let info = readSidecar(dir, name);
    if (!info) {
      try {
        const stat = await fs.promises.stat(path.join(dir, name));
        const file = path.join(dir, name);
        info = { file_name: name, kind, size_bytes: stat.size, created_ms: Math.floor(stat.mtimeMs), sha256: await sha256Of(file), ...contentInfo(file, kind) };
        writeSidecar(dir, info);
      } catch {
        continue;
      }
    }
    out[kind].push(info);
  }
  for (const kind of ['sqlite', 'timeseries'] as const) out[kind].sort((a, b) => b.created_ms - a.created_ms || (a.file_name < b.file_name ? 1 : -1));
  return out;
}

/** What a backup's own content says of it (for a file without a sidecar); nothing for what cannot be read. */
function contentInfo(file: string, kind: BackupKind): Partial<BackupFileInfo> {
  try {
    if (kind === 'sqlite') return readSealedSecrets(file) ? { secrets: true } : {};
    const manifest = readManifestHead(file);
    if (!manifest) return {};
    return {
      collections: manifest.collections.length,
      points: manifest.collections.reduce((n, c) => n + (Number(c.points) || 0), 0),
      ...(typeof manifest.blobs === 'number' ? { blobs: manifest.blobs } : {}),
    };
  } catch {
    return {};
  }
}

const TAR_BLOCK = 512;
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

/** The manifest a timeseries tar starts with (its first entry, a plain ustar header), or null. */
function readManifestHead(file: string): { collections: Array<{ points: unknown }>; blobs?: number } | null {
  const fd = fs.openSync(file, 'r');
  try {
    const header = Buffer.alloc(TAR_BLOCK);
    if (fs.readSync(fd, header, 0, TAR_BLOCK, 0) !== TAR_BLOCK) return null;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || 'x', 8);
    if (name !== 'manifest.json' || !Number.isFinite(size) || size > MAX_MANIFEST_BYTES) return null;
    const body = Buffer.alloc(size);
    if (fs.readSync(fd, body, 0, size, TAR_BLOCK) !== size) return null;
    const manifest = JSON.parse(body.toString('utf8')) as { kind?: unknown; collections?: unknown; blobs?: unknown };
    if (manifest.kind !== 'timeseries' || !Array.isArray(manifest.collections)) return null;
    return { collections: manifest.collections as Array<{ points: unknown }>, ...(typeof manifest.blobs === 'number' ? { blobs: manifest.blobs } : {}) };
  } finally {
    fs.closeSync(fd);
  }
}

/** Deletes the oldest backups of `kind` beyond `keep` (never the newest), with their sidecars; the names removed. */
export async function applyRetention(dir: string, kind: BackupKind, keep: number): Promise<string[]> {
  const list = (await listBackups(dir))[kind];
  const doomed = list.slice(Math.max(1, keep));
  for (const info of doomed) {
    await fs.promises.rm(path.join(dir, info.file_name), { force: true });
    await fs.promises.rm(path.join(dir, `${info.file_name}.json`), { force: true });
  }
  return doomed.map((info) => info.file_name);
}
