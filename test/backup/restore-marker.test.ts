// The restore marker's recovery at start (src/backup/restore-marker.ts), on real folders: a
// restore cut short at each point of its swap leaves the old store or the restored one, whole.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { MARKER_FILE, recoverInterruptedRestore, swapIn, writeMarker, type RestoreMarker } from '../../src/backup/restore-marker.js';

const dirs: string[] = [];
after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

/** A data dir with a live store (`old`) and a staged one (`new`), and the marker of a restore between them. */
function setUp(): { dataDir: string; marker: RestoreMarker } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'restore-marker-'));
  dirs.push(dataDir);
  const marker: RestoreMarker = { id: 'r1', phase: 'prepared', staging: 'restore-staging-r1', previous: 'ts-before-restore-r1' };
  fs.mkdirSync(path.join(dataDir, 'ts', 'o'), { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'ts', 'o', 'data'), 'old');
  fs.mkdirSync(path.join(dataDir, marker.staging, 'ts', 'o'), { recursive: true });
  fs.writeFileSync(path.join(dataDir, marker.staging, 'ts', 'o', 'data'), 'new');
  return { dataDir, marker };
}

const store = (dataDir: string) => fs.readFileSync(path.join(dataDir, 'ts', 'o', 'data'), 'utf8');
const leftovers = (dataDir: string) => fs.readdirSync(dataDir).sort();

test('no marker: nothing to do', () => {
  const { dataDir } = setUp();
  assert.equal(recoverInterruptedRestore(dataDir), null);
  assert.equal(store(dataDir), 'old');
});

test('cut before the swap began: the old store, the staging folder gone', () => {
  const { dataDir, marker } = setUp();
  writeMarker(dataDir, marker);
  assert.match(recoverInterruptedRestore(dataDir)!, /before it swapped/);
  assert.equal(store(dataDir), 'old');
  assert.deepEqual(leftovers(dataDir), ['ts']);
});

test('cut between the two renames (no ts folder at all): the old store is put back', async () => {
  const { dataDir, marker } = setUp();
  writeMarker(dataDir, { ...marker, phase: 'swapping' });
  // The crash comes while swapIn waits between its renames.
  const crash = new Error('crash');
  await assert.rejects(swapIn(dataDir, marker, async () => { throw crash; }), crash);
  assert.equal(fs.existsSync(path.join(dataDir, 'ts')), false);
  assert.match(recoverInterruptedRestore(dataDir)!, /interrupted while swapping/);
  assert.equal(store(dataDir), 'old');
  assert.deepEqual(leftovers(dataDir), ['ts']);
});

test('cut after both renames but before the commit: undone, the old store is back', async () => {
  const { dataDir, marker } = setUp();
  writeMarker(dataDir, { ...marker, phase: 'swapping' });
  await swapIn(dataDir, marker);
  assert.equal(store(dataDir), 'new');
  recoverInterruptedRestore(dataDir);
  assert.equal(store(dataDir), 'old');
  assert.deepEqual(leftovers(dataDir), ['ts']);
});

test('cut after the commit: the restored store stays, the old one is removed', async () => {
  const { dataDir, marker } = setUp();
  writeMarker(dataDir, { ...marker, phase: 'swapping' });
  await swapIn(dataDir, marker);
  writeMarker(dataDir, { ...marker, phase: 'committed' });
  assert.match(recoverInterruptedRestore(dataDir)!, /cleanup is finished/);
  assert.equal(store(dataDir), 'new');
  assert.deepEqual(leftovers(dataDir), ['ts']);
});

test('a marker cut short while being written is removed; one naming folders outside the data dir is refused', () => {
  const { dataDir, marker } = setUp();
  fs.writeFileSync(path.join(dataDir, MARKER_FILE), '{"id": "r1", "pha');
  assert.match(recoverInterruptedRestore(dataDir)!, /unreadable/);
  assert.equal(store(dataDir), 'old');
  fs.writeFileSync(path.join(dataDir, MARKER_FILE), JSON.stringify({ ...marker, phase: 'swapping', previous: '../elsewhere' }));
  assert.throws(() => recoverInterruptedRestore(dataDir), /outside the data dir/);
  assert.equal(store(dataDir), 'old');
});
