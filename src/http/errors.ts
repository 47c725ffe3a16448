// Every error reply of the service is built here, from the one registry of
// codes (shared/errors.ts, which storage workers use too). The contract allows
// two body shapes: `{error}` (the default) and `{status: "error", message}`
// for routes that declare it; the InfluxDB 2 write path (/ingest/v2/api/v2/…)
// answers in InfluxDB 2's own `{code, message}`. Errors that come back from a
// storage worker travel as `{code, message}` and are rebuilt here.

import { ERROR_CODES, type ErrorCode, type WireError } from '../../shared/errors.js';

export { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';

/** `error`: `{error: message}`; `status`: `{status: "error", message}`; `influx2`: `{code: <InfluxDB 2 code>, message}`. */
export type ErrorShape = 'error' | 'status' | 'influx2';

/** InfluxDB 2's error codes by HTTP status (what its clients, Telegraf among them, read). */
const INFLUX2_CODES: Record<number, string> = {
  400: 'invalid', 401: 'unauthorized', 403: 'forbidden', 404: 'not found', 405: 'method not allowed', 409: 'conflict',
  413: 'request too large', 415: 'unsupported media type', 422: 'unprocessable entity', 429: 'too many requests',
  501: 'not implemented', 503: 'unavailable', 507: 'unavailable',
};

export class HttpError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Record<string, string> | undefined;
  /** Fields the error body carries beside its message (a secondary's `leader`). */
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, headers?: Record<string, string>, details?: Record<string, unknown>) {
    super(message);
    this.name = 'HttpError';
    this.code = code;
    this.status = ERROR_CODES[code].status;
    this.headers = headers;
    this.details = details;
  }

  /** The plain form that crosses a thread boundary. */
  toWire(): WireError {
    return { code: this.code, message: this.message };
  }

  static fromWire(wire: WireError): HttpError {
    // The code came through msgpack from another thread: trust the list, not the type.
    const code = Object.hasOwn(ERROR_CODES, wire.code) ? wire.code : 'INTERNAL';
    return new HttpError(code, wire.message);
  }
}

export const badRequest = (message: string) => new HttpError('BAD_REQUEST', message);
export const unauthorized = (message = 'missing or invalid token') => new HttpError('UNAUTHORIZED', message);
export const forbidden = (message = 'access denied') => new HttpError('FORBIDDEN', message);
export const notFound = (message = 'not found') => new HttpError('NOT_FOUND', message);
export const conflict = (message: string) => new HttpError('CONFLICT', message);
export const unavailable = (message: string) => new HttpError('UNAVAILABLE', message);

export function errorBody(shape: ErrorShape, message: string, status = 500): Record<string, string> {
  if (shape === 'influx2') return { code: INFLUX2_CODES[status] ?? 'internal error', message };
  return shape === 'status' ? { status: 'error', message } : { error: message };
}

/** Turns anything thrown by a handler into status + body; unknown errors become a bare 500. */
export function toErrorReply(err: unknown, shape: ErrorShape): { status: number; body: string; headers?: Record<string, string> } {
  if (isWireConvertible(err)) err = HttpError.fromWire(err.toWire());
  if (err instanceof HttpError) {
    return { status: err.status, body: JSON.stringify({ ...errorBody(shape, err.message, err.status), ...err.details }), headers: err.headers };
  }
  return { status: 500, body: JSON.stringify(errorBody(shape, 'internal error', 500)) };
}

/** Errors of other layers (storage) that know their wire form, e.g. StorageError. */
export function isWireConvertible(err: unknown): err is { toWire(): WireError } {
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
    { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] },
  ],
} as const;
