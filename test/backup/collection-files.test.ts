// Every file name the storage engine writes into a collection folder is one that recovery, the
// data-dir check and a backup's restore accept (they share shared/collection-files.ts); a restore
// refused frozen day logs while its own copy of the list lacked them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DAY_LOG_FILE, isCollectionFileName, PART_FILE, SEALED_FILE } from '../../shared/collection-files.js';
import { frozenLogName, partFileName } from '../../workers/collection.js';
import { dayLogName } from '../../workers/day-file.js';
import { sealedFileName } from '../../workers/sealed-file.js';
import { TAG_LOG_FILE } from '../../workers/tag-log.js';

test('the names the store writes are collection files; temporary and set-aside ones are not', () => {
  const day = '20261127';
  const written = ['meta.json', TAG_LOG_FILE, dayLogName('active', day), dayLogName('late', day), frozenLogName('active', day, 7), frozenLogName('late', day, 12345678), partFileName(day, 1), sealedFileName(day)];
  for (const name of written) assert.ok(isCollectionFileName(name), name);
  assert.equal(DAY_LOG_FILE.exec(frozenLogName('late', day, 7))?.slice(1).join(' '), `late ${day} 00000007`);
  assert.equal(DAY_LOG_FILE.exec(dayLogName('active', day))?.[3], undefined, 'a writable log has no generation');
  assert.equal(PART_FILE.exec(partFileName(day, 42))?.[2], '00000042');
  assert.equal(SEALED_FILE.exec(sealedFileName(day))?.[1], day);
  for (const name of [`${partFileName(day, 1)}.3.tmp`, `${sealedFileName(day)}.tmp`, `${dayLogName('active', day)}.bad-1700000000000`, 'meta.json.tmp', `active-${day}-7.log`, `frozen-${day}.log`, '../meta.json']) {
    assert.ok(!isCollectionFileName(name), name);
  }
});
