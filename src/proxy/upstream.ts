// What the two proxied services (WIRE.md "Proxied services") share: a route whose setting is
// unset answers 501 naming it; an upstream 4xx becomes our answer with its status and `{error}`
// carrying the upstream's own message; anything else that goes wrong upstream (5xx, no answer in
// time, refused connection, an answer we cannot read) is a 502 whose message says which.

import { ServiceError } from '../../shared/errors.js';
import type { Reply } from '../http/route.js';

/** Longest upstream message repeated in our answers. */
const MAX_MESSAGE_CHARS = 500;

export function notConfigured(setting: string): ServiceError {
  return new ServiceError('NOT_IMPLEMENTED', `${setting} is not set`);
}

export function badGateway(message: string): ServiceError {
  return new ServiceError('BAD_GATEWAY', message);
}

/**
 * Our answer to an upstream status of 400 and above. A 4xx passes through with its status and
 * `{error: <the upstream's message>}`, except 401: the upstream refusing this service is a fault
 * between the service and its upstream, and a 401 would tell the caller its own token is bad.
 */
export function upstreamRefusal(service: string, status: number, message: string): Reply {
  const text = message || `${service} answered ${status}`;
  if (status >= 400 && status < 500 && status !== 401) return { status, body: { error: text } };
  throw badGateway(`${service} answered ${status}${message ? `: ${message}` : ''}`);
}

/**
 * The message of an upstream error body, in the shapes upstreams use: Qdrant's
 * `{status: {error}}`, `{error}` (a string or `{message}`), FastAPI's `{detail}` (ADK), `{message}`;
 * plain text as it is. Cut to MAX_MESSAGE_CHARS.
 */
export function upstreamMessage(body: unknown): string {
  let text = '';
  if (typeof body === 'string') text = body.trim();
  else if (body && typeof body === 'object') {
    const b = body as { status?: { error?: unknown }; error?: unknown; detail?: unknown; message?: unknown };
    const found = [b.status?.error, b.error, (b.error as { message?: unknown } | undefined)?.message, b.detail, b.message].find(
      (v) => typeof v === 'string' || (Array.isArray(v) && v.length > 0),
    );
    text = typeof found === 'string' ? found : found !== undefined ? JSON.stringify(found) : '';
  }
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS)}…` : text;
}

/** Why a connection failed, in a word an operator can act on (ECONNREFUSED, ENOTFOUND, a TLS code). */
export function networkReason(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown; cause?: unknown } | null;
  if (typeof e?.code === 'string') return e.code;
  const cause = e?.cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return typeof e?.message === 'string' ? e.message : String(err);
}
