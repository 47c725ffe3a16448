import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { asStorageError, ERROR_CODES, ServiceError } from '../../shared/errors.js';

/** A real system error from the file system, with its code replaced (a full disk cannot be made on demand). */
function systemError(code: string): NodeJS.ErrnoException {
  try {
    fs.openSync('/nonexistent-dir-of-this-test/file', 'r');
  } catch (err) {
    (err as NodeJS.ErrnoException).code = code;
    return err as NodeJS.ErrnoException;
  }
  throw new Error('unreachable');
}

test('a full disk or quota is INSUFFICIENT_STORAGE (507), any other file-system failure INTERNAL', () => {
  for (const code of ['ENOSPC', 'EDQUOT']) {
    const mapped = asStorageError(systemError(code));
    assert.ok(mapped instanceof ServiceError);
    assert.equal(mapped.code, 'INSUFFICIENT_STORAGE');
    assert.equal(ServiceError.fromWire(mapped.toWire()).status, 507);
  }
  const other = asStorageError(systemError('EIO'));
  assert.ok(other instanceof ServiceError);
  assert.equal(other.code, 'INTERNAL');
});

test('what is not a system error is returned unchanged, so its stack is kept', () => {
  const bug = new TypeError('a bug');
  assert.equal(asStorageError(bug), bug);
  const known = new ServiceError('NOT_FOUND', 'gone');
  assert.equal(asStorageError(known), known);
});

test('a code that is not in the list becomes a 500 on the main thread', () => {
  assert.equal(ServiceError.fromWire({ code: 'NO_SUCH_CODE' as keyof typeof ERROR_CODES, message: 'x' }).status, 500);
  assert.equal(ServiceError.fromWire({ code: 'toString' as keyof typeof ERROR_CODES, message: 'x' }).status, 500);
});
