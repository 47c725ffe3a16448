// The command's HTTPS requests to a Target: whole replies for small answers and writes, a streamed
// reply for exports and downloads, the retries a busy service asks for (503 and 429 with
// Retry-After, a dropped keep-alive connection), and `call` for the management commands: JSON in
// and out, a refusal turned into one line in the service's own words. Messages never hold the
// credentials.

import https from 'node:https';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { CommandError } from './command-error.js';
import type { Target } from './target-types.js';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RequestOptions {
  body?: Uint8Array | string;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  /** More headers (a Range). */
  headers?: Record<string, string>;
}

/** Statuses that mean "not now": the service is busy, restarting a worker, or over a rate. */
const RETRYABLE = new Set([429, 502, 503, 504]);
/** Connection failures a retry cures (a keep-alive socket the service closed, a restart). */
const RETRYABLE_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);
const MAX_BACKOFF_MS = 5000;

/** Sends one request and returns the reply as it comes (any status); the body is left to the caller. */
export function openRequest(target: Target, method: string, path: string, o: RequestOptions = {}): Promise<IncomingMessage> {
  const url = new URL(path, target.baseUrl);
  const headers: Record<string, string> = { ...o.headers, authorization: target.authorization };
  if (o.contentType) headers['content-type'] = o.contentType;
  if (o.accept) headers.accept = o.accept;
  if (o.body !== undefined) headers['content-length'] = String(typeof o.body === 'string' ? Buffer.byteLength(o.body) : o.body.byteLength);
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers, agent: target.agent, signal: o.signal }, resolve);
    req.on('error', (err) => reject(describe(err, method, url)));
    req.end(o.body);
  });
}

/** Sends one request and reads the whole reply. */
export async function request(target: Target, method: string, path: string, o: RequestOptions = {}): Promise<Reply> {
  const res = await openRequest(target, method, path, o);
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', resolve);
    res.on('error', (err) => reject(describe(err, method, new URL(path, target.baseUrl))));
  });
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
}

/**
 * request() again while the service says "busy" (429, 502-504) or the connection drops, waiting
 * Retry-After or a doubling backoff; at most `attempts` tries. Safe only for idempotent
 * requests: every write of these commands is (the store keeps the last write of a tag and time).
 */
export async function requestWithRetry(target: Target, method: string, path: string, o: RequestOptions = {}, attempts = 12): Promise<Reply> {
  for (let attempt = 1; ; attempt++) {
    let reply: Reply | null = null;
    try {
      reply = await request(target, method, path, o);
      if (!RETRYABLE.has(reply.status) || attempt >= attempts) return reply;
    } catch (err) {
      if (o.signal?.aborted || !isRetryable(err) || attempt >= attempts) throw err;
    }
    await sleep(retryDelay(reply, attempt), o.signal);
  }
}

function retryDelay(reply: Reply | null, attempt: number): number {
  const after = Number(reply?.headers['retry-after']);
  if (Number.isFinite(after) && after >= 0) return Math.min(after * 1000, 30_000);
  return Math.min(50 * 2 ** attempt, MAX_BACKOFF_MS);
}

function isRetryable(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
  return code !== undefined && RETRYABLE_CODES.has(code);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new Error('the operation was aborted', { cause: reason });
  err.name = 'AbortError';
  return err;
}

/** The service's own words for a failed reply: `error` or `message` of its JSON, else the start of the text. */
export function replyProblem(reply: Reply): string {
  const said = refusal(reply.body.toString('utf8'));
  return `HTTP ${reply.status}${said ? `: ${said}` : ''}`;
}

/** The reply's JSON body when it is 200, else an error naming what was asked and what came back. */
export function okJson<T>(reply: Reply, what: string): T {
  if (reply.status !== 200) throw new Error(`${what} failed: ${replyProblem(reply)}`);
  try {
    return JSON.parse(reply.body.toString('utf8')) as T;
  } catch {
    throw new Error(`${what}: the service answered something that is not JSON`);
  }
}

/** A connection error naming the method and URL (never the headers, which hold the credentials). */
function describe(err: Error, method: string, url: URL): Error {
  if (err.name === 'AbortError') return err;
  const wrapped = new Error(`${method} ${url.origin}${url.pathname}: ${err.message}`, { cause: err });
  return wrapped;
}

/** One JSON call of a management command; a status outside 2xx, or `success: false`, is a CommandError with the service's words. */
export async function call(target: Target, method: string, path: string, json?: unknown): Promise<{ status: number; headers: IncomingHttpHeaders; body: any }> {
  let reply: Reply;
  try {
    reply = await request(target, method, path, json === undefined ? {} : { body: JSON.stringify(json), contentType: 'application/json' });
  } catch (err) {
    throw new CommandError((err as Error).message);
  }
  const text = reply.body.toString('utf8');
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: kept as text for the message
  }
  if (reply.status < 200 || reply.status >= 300 || (body && typeof body === 'object' && body.success === false)) {
    throw new CommandError(`${method} ${path.split('?')[0]}: ${reply.status} ${refusal(text)}`);
  }
  return { status: reply.status, headers: reply.headers, body };
}

/** What a reply's body says, in one line: its JSON `error` or `message`, else the start of its text. */
export function refusal(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown } | null;
    const said = body && typeof body === 'object' ? body.error ?? body.message : undefined;
    if (said !== undefined) return typeof said === 'string' ? said : JSON.stringify(said);
  } catch {
    // not JSON
  }
  return text.slice(0, 300).replace(/\s+/g, ' ').trim();
}
