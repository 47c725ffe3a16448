// A time-series restore swaps <dataDir>/ts for the backup's copy with two renames. The marker
// file says how far it got, so a crash at any point (kill -9, power) is finished or undone at the
// next start, before the storage workers open anything: the store is then entirely the old one
// or entirely the restored one, never a mix.
//
//   prepared   the backup is unpacked and verified in `staging`; ts is untouched
//   swapping   ts may have been moved to `previous`, and staging's ts may be in its place
//   committed  the restored ts is in place; `previous` and `staging` are left to delete
//
// A restore that never reached `committed` is undone (it never answered success).

import fs from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../../shared/file-modes.js';
import { fsyncDir } from '../../shared/fsync-dir.js';

export const MARKER_FILE = 'restore-in-progress.json';

export interface RestoreMarker {
  id: string;
  phase: 'prepared' | 'swapping' | 'committed';
  /** Directory names inside the data dir. */
  staging: string;
  previous: string;
}


/** Writes the marker so that it survives a power loss before the step it announces. */
export function writeMarker(dataDir: string, marker: RestoreMarker): void {
  const file = path.join(dataDir, MARKER_FILE);
  const tmp = `${file}.tmp`;
  const fd = fs.openSync(tmp, 'w', PRIVATE_FILE_MODE);
  try {
    fs.writeSync(fd, JSON.stringify(marker));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, file);
  fsyncDir(dataDir);
}

export function clearMarker(dataDir: string): void {
  fs.rmSync(path.join(dataDir, MARKER_FILE), { force: true });
  fsyncDir(dataDir);
}

/** Moves the live ts folder aside and the staged one into its place; the caller has written `swapping`. */
export function swapIn(dataDir: string, marker: RestoreMarker, between: () => Promise<void> = async () => {}): Promise<void> {
  const live = path.join(dataDir, 'ts');
  const previous = path.join(dataDir, marker.previous);
  const staged = path.join(dataDir, marker.staging, 'ts');
  return (async () => {
    if (fs.existsSync(live)) fs.renameSync(live, previous);
    await between();
    fs.mkdirSync(staged, { recursive: true }); // a backup of no collections has no ts folder
    fs.renameSync(staged, live);
    fsyncDir(dataDir);
  })();
}

/** Puts the live ts folder back as it was before swapIn (after a failure, or at start after a crash). */
export function swapBack(dataDir: string, marker: RestoreMarker): void {
  const live = path.join(dataDir, 'ts');
  const previous = path.join(dataDir, marker.previous);
  if (!fs.existsSync(previous)) return; // the first rename never happened: ts is the old one
  if (fs.existsSync(live)) fs.renameSync(live, path.join(dataDir, marker.staging, 'ts-undone'));
  fs.renameSync(previous, live);
  fsyncDir(dataDir);
}

/**
 * At start, before the storage workers: finishes or undoes a restore a crash interrupted.
 * Returns what it did (for the log), or null when there was nothing to do.
 */
export function recoverInterruptedRestore(dataDir: string): string | null {
  let marker: RestoreMarker;
  try {
    marker = JSON.parse(fs.readFileSync(path.join(dataDir, MARKER_FILE), 'utf8')) as RestoreMarker;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    // A marker that cannot be read was being written: its step had not begun.
    fs.rmSync(path.join(dataDir, MARKER_FILE), { force: true });
    return 'an unreadable restore marker was removed (its restore had not begun to swap)';
  }
  if (!safeName(marker.staging) || !safeName(marker.previous)) throw new Error(`${MARKER_FILE} names folders outside the data dir; remove it by hand after checking ts/`);
  let outcome: string;
  if (marker.phase === 'committed') {
    outcome = `time-series restore ${marker.id} had swapped in the backup; its cleanup is finished now`;
  } else if (marker.phase === 'swapping') {
    swapBack(dataDir, marker);
    outcome = `time-series restore ${marker.id} was interrupted while swapping; the store before it is back`;
  } else {
    outcome = `time-series restore ${marker.id} was interrupted before it swapped anything; the store is as it was`;
  }
  fs.rmSync(path.join(dataDir, marker.staging), { recursive: true, force: true });
  fs.rmSync(path.join(dataDir, marker.previous), { recursive: true, force: true });
  clearMarker(dataDir);
  return outcome;
}

function safeName(name: unknown): boolean {
  return typeof name === 'string' && /^[A-Za-z0-9._-]+$/.test(name) && name !== '.' && name !== '..' && name !== 'ts';
}
