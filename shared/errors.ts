/**
 * The one list of error codes, for both threads: the main thread answers HTTP with them
 * (src/http/errors.ts adds status lines and reply shapes), a storage worker sends them back as
 * `{code, message}` (WireError) and the main thread rebuilds its HTTP error from the code.
 *
 * ServiceError is the error code on either side of the thread boundary throws on purpose (a
 * route's 400, the file engine, collection-id and scope-name rules); asStorageError is the one
 * place a file system failure becomes a code (ENOSPC and EDQUOT are INSUFFICIENT_STORAGE).
 */

export const ERROR_CODES = {
  BAD_REQUEST: { status: 400, meaning: 'malformed body, query or filter; validation failure' },
  MALFORMED_JSON: { status: 400, meaning: 'the body is not valid JSON' },
  UNAUTHORIZED: { status: 401, meaning: 'missing, malformed, expired or wrongly signed token; its account deleted; issued before a password change' },
  BAD_CREDENTIALS: { status: 401, meaning: 'login with an unknown email or a wrong password' },
  FORBIDDEN: { status: 403, meaning: 'role or row-level grant does not allow the request' },
  NOT_FOUND: { status: 404, meaning: 'unknown path, or the named resource does not exist' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'the path exists but not with this method' },
  CONFLICT: { status: 409, meaning: 'duplicate key on create; the message starts with DUPLICATE:' },
  PAYLOAD_TOO_LARGE: { status: 413, meaning: 'the body is larger than the route allows' },
  URI_TOO_LONG: { status: 414, meaning: 'the path and query string are longer than server.maxUrlBytes' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'the body has a content type the route does not read' },
  RANGE_NOT_SATISFIABLE: { status: 416, meaning: 'a Range header no byte of the blob or attachment satisfies' },
  RATE_LIMITED: { status: 429, meaning: 'too many register/login requests for one email or from one client address' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'the request headers are larger than server.maxHeaderBytes' },
  ACCOUNT_LOCKED: { status: 429, meaning: 'too many failed logins for an email from one client address; locked there for a while' },
  INTERNAL: { status: 500, meaning: 'unexpected failure; details are in the log, not the reply' },
  NOT_IMPLEMENTED: { status: 501, meaning: 'the subsystem is disabled or failed to start' },
  BAD_GATEWAY: { status: 502, meaning: 'an upstream system the service called (the PI Web API of the connector, Qdrant, the agent service) failed, timed out, refused it or could not be reached' },
  UNAVAILABLE: { status: 503, meaning: 'backpressure (buffer full), worker restarting, or shutting down' },
  INSUFFICIENT_STORAGE: { status: 507, meaning: 'free disk space is below the configured floor' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** An error as it crosses the thread boundary; rebuilt into an ServiceError on the main thread. */
export interface WireError {
  code: ErrorCode;
  message: string;
}

/**
 * The one error class of the service, on both sides of the thread boundary: code on purpose
 * throws it (a handler's 400, the file engine's 404), the HTTP layer answers with its code's
 * status (src/http/errors.ts shapes the body), and a storage worker sends it back as
 * `{code, message}` (WireError) for the main thread to rebuild with fromWire.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Reply headers it asks for (`retry-after`, `allow`). */
  readonly headers: Record<string, string> | undefined;
  /** Fields the error body carries beside its message (a secondary's `leader`). */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, extra: { headers?: Record<string, string>; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = 'ServiceError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.headers = extra.headers;
    this.details = extra.details;
  }

  /** The plain form that crosses a thread boundary. */
  toWire(): WireError {
    return { code: this.code, message: this.message };
  }

  static fromWire(wire: WireError): ServiceError {
    // The code came through msgpack from another thread: trust the list, not the type.
    const code = Object.hasOwn(ERROR_CODES, wire.code) ? wire.code : 'INTERNAL';
    return new ServiceError(code, wire.message);
  }
}

export const badRequest = (message: string) => new ServiceError('BAD_REQUEST', message);
export const unauthorized = (message = 'missing or invalid token') => new ServiceError('UNAUTHORIZED', message);
export const forbidden = (message = 'access denied') => new ServiceError('FORBIDDEN', message);
export const notFound = (message = 'not found') => new ServiceError('NOT_FOUND', message);
export const conflict = (message: string) => new ServiceError('CONFLICT', message);
export const internal = (message: string) => new ServiceError('INTERNAL', message);

/** A Node system error (fs, os): it carries a syscall name and an errno code. */
function isSystemError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string' && 'syscall' in err;
}

/**
 * A full volume or used-up quota as a 507 naming it, from a file system call (ENOSPC, EDQUOT) or
 * SQLite (SQLITE_FULL); null for any other error.
 */
export function diskFullError(err: unknown): ServiceError | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL') {
    return new ServiceError('INSUFFICIENT_STORAGE', `no space left on the data volume (${code}); nothing of this request was kept, reads go on`, { cause: err });
  }
  return null;
}

/**
 * Maps what a storage call threw onto a ServiceError: a full disk or quota is
 * INSUFFICIENT_STORAGE, any other file-system failure INTERNAL (the system error stays as the
 * cause, for the log). Anything else (a caller's sink that threw, a bug) is returned unchanged
 * so its stack is not lost.
 */
export function asStorageError(err: unknown): unknown {
  if (err instanceof ServiceError || !isSystemError(err)) return err;
  if (err.code === 'ENOSPC' || err.code === 'EDQUOT') {
    return new ServiceError('INSUFFICIENT_STORAGE', `no space left on the data volume (${err.code})`, { cause: err });
  }
  return new ServiceError('INTERNAL', `storage I/O failed: ${err.message}`, { cause: err });
}
