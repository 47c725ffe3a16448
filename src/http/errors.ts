// Every error reply of the service is built here, from the one error class and registry of
// codes (shared/errors.ts, which storage workers use too). The contract allows two body
// shapes: `{error}` (the default) and `{status: "error", message}` for routes that declare
// it; the InfluxDB 2 write path (/ingest/v2/api/v2/…) answers in InfluxDB 2's own
// `{code, message}`.

import { diskFullError, ServiceError } from '../../shared/errors.js';
import { redactApiKeys } from '../log.js';

/**
 * `error`: `{error: message}`; `status`: `{status: "error", message}`; `influx2`: `{code: <InfluxDB 2 code>, message}`;
 * `prometheus`: `{status: "error", errorType, error}` as Prometheus' HTTP API answers.
 */
export type ErrorShape = 'error' | 'status' | 'influx2' | 'prometheus';

/** InfluxDB 2's error codes by HTTP status (what its clients, Telegraf among them, read). */
const INFLUX2_CODES: Record<number, string> = {
  400: 'invalid', 401: 'unauthorized', 403: 'forbidden', 404: 'not found', 405: 'method not allowed', 409: 'conflict',
  413: 'request too large', 415: 'unsupported media type', 422: 'unprocessable entity', 429: 'too many requests',
  501: 'not implemented', 503: 'unavailable', 507: 'unavailable',
};

/** Prometheus' errorType by HTTP status (its clients, Grafana among them, read it). */
const PROMETHEUS_TYPES: Record<number, string> = {
  400: 'bad_data', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 405: 'bad_data', 406: 'bad_data', 413: 'bad_data', 415: 'bad_data',
  422: 'execution', 429: 'unavailable', 501: 'unavailable', 503: 'unavailable', 507: 'unavailable',
};

export function errorBody(shape: ErrorShape, raw: string, status = 500): Record<string, string> {
  // A message may echo what the request held (a path): an API key pasted there is not sent back.
  const message = redactApiKeys(raw);
  if (shape === 'influx2') return { code: INFLUX2_CODES[status] ?? 'internal error', message };
  if (shape === 'prometheus') return { status: 'error', errorType: PROMETHEUS_TYPES[status] ?? 'internal', error: message };
  return shape === 'status' ? { status: 'error', message } : { error: message };
}

/** Turns anything thrown by a handler into status + body; unknown errors become a bare 500. */
export function toErrorReply(err: unknown, shape: ErrorShape): { status: number; body: string; headers?: Record<string, string> } {
  if (err instanceof ServiceError) {
    return { status: err.status, body: JSON.stringify({ ...errorBody(shape, err.message, err.status), ...err.details }), headers: err.headers };
  }
  // A full volume is the operator's to fix, never a bug: 507 wherever it surfaces.
  const full = diskFullError(err);
  if (full) return toErrorReply(full, shape);
  return { status: 500, body: JSON.stringify(errorBody(shape, 'internal error', 500)) };
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
    {
      type: 'object',
      properties: { status: { type: 'string', enum: ['error'] }, errorType: { type: 'string' }, error: { type: 'string' } },
      required: ['status', 'errorType', 'error'],
    },
  ],
} as const;
