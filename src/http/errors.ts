// Every error reply of the service is built here, from one registry of codes.
// The contract allows two body shapes: `{error}` (the default) and
// `{status: "error", message}` for routes that declare it. Errors that come
// back from a storage worker travel as `{code, message}` and are rebuilt here.

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
  RATE_LIMITED: { status: 429, meaning: 'too many register/login requests for one email or from one client address' },
  HEADERS_TOO_LARGE: { status: 431, meaning: 'the request headers are larger than server.maxHeaderBytes' },
  ACCOUNT_LOCKED: { status: 429, meaning: 'too many failed logins for an email from one client address; locked there for a while' },
  INTERNAL: { status: 500, meaning: 'unexpected failure; details are in the log, not the reply' },
  NOT_IMPLEMENTED: { status: 501, meaning: 'the subsystem is disabled or failed to start' },
  UNAVAILABLE: { status: 503, meaning: 'backpressure (buffer full), worker restarting, or shutting down' },
  INSUFFICIENT_STORAGE: { status: 507, meaning: 'free disk space is below the configured floor' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** `error`: `{error: message}`; `status`: `{status: "error", message}`. */
export type ErrorShape = 'error' | 'status';

export class HttpError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, headers?: Record<string, string>) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.headers = headers;
  }

  /** The plain form that crosses a thread boundary. */
  toWire(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }

  static fromWire(wire: { code: string; message: string }): HttpError {
    const code = (wire.code in ERROR_CODES ? wire.code : 'INTERNAL') as ErrorCode;
    return new HttpError(code, wire.message);
  }
}

export const badRequest = (message: string) => new HttpError('BAD_REQUEST', message);
export const unauthorized = (message = 'missing or invalid token') => new HttpError('UNAUTHORIZED', message);
export const forbidden = (message = 'access denied') => new HttpError('FORBIDDEN', message);
export const notFound = (message = 'not found') => new HttpError('NOT_FOUND', message);
export const conflict = (message: string) => new HttpError('CONFLICT', message);
export const unavailable = (message: string) => new HttpError('UNAVAILABLE', message);

export function errorBody(shape: ErrorShape, message: string): Record<string, string> {
  return shape === 'status' ? { status: 'error', message } : { error: message };
}

/** Turns anything thrown by a handler into status + body; unknown errors become a bare 500. */
export function toErrorReply(err: unknown, shape: ErrorShape): { status: number; body: string; headers?: Record<string, string> } {
  if (isWireConvertible(err)) err = HttpError.fromWire(err.toWire());
  if (err instanceof HttpError) {
    return { status: err.status, body: JSON.stringify(errorBody(shape, err.message)), headers: err.headers };
  }
  return { status: 500, body: JSON.stringify(errorBody(shape, 'internal error')) };
}

/** Errors of other layers (storage) that know their wire form, e.g. StorageError. */
export function isWireConvertible(err: unknown): err is { toWire(): { code: string; message: string } } {
  return !(err instanceof HttpError) && typeof (err as { toWire?: unknown })?.toWire === 'function';
}

/** Schema of both error shapes, for the OpenAPI document. */
export const ERROR_SCHEMA = {
  oneOf: [
    { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] },
    {
      type: 'object',
      properties: { status: { type: 'string', enum: ['error'] }, message: { type: 'string' } },
      required: ['status', 'message'],
    },
  ],
} as const;
