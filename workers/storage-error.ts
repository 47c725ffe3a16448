/**
 * The one error type the storage engine throws on purpose. It crosses the thread boundary as
 * `{code, message}` (toWire) and the main thread rebuilds its HTTP error from the code, whose
 * names are those of src/http/errors.ts.
 */

/** UNAVAILABLE is not raised by the file engine; the worker entry uses it for cancelled or stalled tasks. */
export type StorageErrorCode = 'BAD_REQUEST' | 'NOT_FOUND' | 'CONFLICT' | 'UNAVAILABLE' | 'INTERNAL' | 'INSUFFICIENT_STORAGE';

export class StorageError extends Error {
  readonly code: StorageErrorCode;

  constructor(code: StorageErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageError';
    this.code = code;
  }

  toWire(): { code: StorageErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export const badRequest = (message: string) => new StorageError('BAD_REQUEST', message);
export const notFound = (message: string) => new StorageError('NOT_FOUND', message);
export const internal = (message: string) => new StorageError('INTERNAL', message);

/** A Node system error (fs, os): it carries a syscall name and an errno code. */
function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && 'syscall' in err;
}

/**
 * Maps what a storage call threw onto a StorageError: a full disk or quota is
 * INSUFFICIENT_STORAGE, any other file-system failure INTERNAL. Anything else (a caller's sink
 * that threw, a bug) is returned unchanged so its stack is not lost.
 */
export function asStorageError(err: unknown): unknown {
  if (err instanceof StorageError || !isSystemError(err)) return err;
  if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
    return new StorageError('INSUFFICIENT_STORAGE', `no space left for ${err.path ?? 'a storage file'}`, { cause: err });
  }
  return new StorageError('INTERNAL', `storage I/O failed: ${err.message}`, { cause: err });
}
