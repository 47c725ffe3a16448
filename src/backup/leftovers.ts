// What a backup or restore interrupted by a crash (kill -9, power) leaves behind, removed at the
// next start with one log line each saying what and why:
//
// - `<backup>.partial` in the backup directory: an archive being written. Only those this data dir
//   began are removed (the record below), never a name guessed from a folder another node may
//   share, nor one of a backup directory changed since.
// - `backup-staging-<job>`, `restore-sqlite-<job>.sqlite(-journal)` and `restore-staging-<job>` in
//   the data dir: a backup's links, a sqlite restore's copy, a time-series restore's unpacked
//   backup (a full copy of the store; the backup file still has it all). A time-series restore's
//   marker (restore-marker.ts) is dealt with before this runs, at build; folders a marker still
//   names are left to it, so a restore it can still finish loses nothing.
// - `ts-before-restore-<job>` with no marker naming it is only reported, never removed: it may
//   hold the only copy of a store (a marker lost mid-swap), so an operator decides.

import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../log.js';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { MARKER_FILE, type RestoreMarker } from './restore-marker.js';

/** The data dir's list of partial backup files being written (absolute paths). */
const PARTIALS_FILE = 'backup-partials.json';

const LEFTOVERS: Array<{ pattern: RegExp; why: string }> = [
  { pattern: /^backup-staging-[A-Za-z0-9-]+$/, why: 'the staging folder of a time-series backup' },
  { pattern: /^restore-sqlite-[A-Za-z0-9-]+\.sqlite(-journal)?$/, why: 'the copy a metadata restore was checking' },
  { pattern: /^restore-staging-[A-Za-z0-9-]+$/, why: 'the unpacked backup of a time-series restore that never swapped it in' },
];

function readPartials(dataDir: string): string[] {
  try {
    const list = JSON.parse(fs.readFileSync(path.join(dataDir, PARTIALS_FILE), 'utf8')) as unknown;
    return Array.isArray(list) ? list.filter((f): f is string => typeof f === 'string' && path.isAbsolute(f) && f.endsWith('.partial')) : [];
  } catch {
    return [];
  }
}

function writePartials(dataDir: string, list: string[]): void {
  const file = path.join(dataDir, PARTIALS_FILE);
  if (list.length === 0) return void fs.rmSync(file, { force: true });
  fs.writeFileSync(`${file}.tmp`, JSON.stringify(list), { mode: PRIVATE_FILE_MODE });
  fs.renameSync(`${file}.tmp`, file);
}

/** Records a partial backup file before it is created, so a crash cannot leave it unnamed. */
export function notePartial(dataDir: string, file: string): void {
  const absolute = path.resolve(file);
  const list = readPartials(dataDir);
  if (!list.includes(absolute)) writePartials(dataDir, [...list, absolute]);
}

/** The partial file is renamed into place or removed. */
export function forgetPartial(dataDir: string, file: string): void {
  const absolute = path.resolve(file);
  const list = readPartials(dataDir);
  if (list.includes(absolute)) writePartials(dataDir, list.filter((f) => f !== absolute));
}

/** At start, before any backup or restore: removes the leftovers of interrupted ones (see the top of this file). */
export function removeLeftovers(dataDir: string, log: Pick<Logger, 'warn'>): void {
  for (const file of readPartials(dataDir)) {
    if (!fs.existsSync(file)) continue;
    fs.rmSync(file, { force: true });
    log.warn({ file }, `removed ${file}: a backup interrupted by a crash or kill left this unfinished archive`);
  }
  writePartials(dataDir, []);
  const kept = new Set(markerFolders(dataDir));
  for (const name of fs.readdirSync(dataDir)) {
    if (kept.has(name)) continue;
    if (/^ts-before-restore-[A-Za-z0-9-]+$/.test(name)) {
      log.warn({ file: path.join(dataDir, name) }, `kept ${name}: a time-series store a restore swapped out, named by no restore marker; if ts/ holds the store you want, remove it by hand`);
      continue;
    }
    const leftover = LEFTOVERS.find((l) => l.pattern.test(name));
    if (!leftover) continue;
    fs.rmSync(path.join(dataDir, name), { recursive: true, force: true });
    log.warn({ file: path.join(dataDir, name) }, `removed ${name}: ${leftover.why}, left by a backup or restore interrupted by a crash or kill`);
  }
}

/** Folders a restore marker still names (none once recovery has run, but never guess). */
function markerFolders(dataDir: string): string[] {
  try {
    const marker = JSON.parse(fs.readFileSync(path.join(dataDir, MARKER_FILE), 'utf8')) as Partial<RestoreMarker>;
    return [marker.staging, marker.previous].filter((n): n is string => typeof n === 'string');
  } catch {
    return [];
  }
}
