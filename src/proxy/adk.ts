// /svcapi/adk/<rest>?<query> is forwarded to <adk.baseUrl>/<rest>?<query> (WIRE.md "Proxied
// services"), path and query exactly as the caller sent them, except that a path segment that is
// or could decode to `.` or `..`, or holds `/`, `\` or NUL in any encoding, is a 400
// (http/upstream-path.ts). The upstream learns who calls from `X-Historian-User` (the caller's
// email) and nothing else about them: only the body's `content-type` and `accept` go along,
// never `authorization`, cookies or the token.
//
// Bounded, not streamed: the request body was read whole by the server (server.maxBodyBytes), the
// answer is read whole up to MAX_RESPONSE_BYTES, and the whole exchange, from connecting to the
// answer's last byte, takes at most `adk.timeoutMs`. An answer below 400 goes back with its
// status, body and content type; the others as upstream.ts says.

import http from 'node:http';
import https from 'node:https';
import { ServiceError, badRequest } from '../../shared/errors.js';
import type { HttpMethod, Reply } from '../http/route.js';
import { checkedPath } from '../http/upstream-path.js';
import { badGateway, networkReason, notConfigured, upstreamMessage, upstreamRefusal } from './upstream.js';

/** Largest answer read from the agent service; more is a 502 (it cannot fill our memory). */
const MAX_RESPONSE_BYTES = 64 << 20;

/** Request headers passed on, besides the ones set here. */
const FORWARDED_HEADERS = ['content-type', 'accept'] as const;

export interface ForwardedRequest {
  method: HttpMethod;
  /** The path below the prefix, as sent (still percent-encoded), without its leading `/`. */
  rest: string;
  /** The query string without `?`, as sent. */
  rawQuery: string;
  headers: Readonly<Record<string, string>>;
  body: Uint8Array | null;
  /** The caller's email. */
  user: string;
  /** Aborted when the caller goes away: the upstream request is dropped too. */
  signal: AbortSignal;
}

export class AdkProxy {
  private readonly base: URL | null;
  private readonly agent: http.Agent | null = null;

  constructor(baseUrl: string | null, private readonly timeoutMs: number) {
    this.base = baseUrl === null ? null : new URL(baseUrl);
    if (this.base) {
      const options = { keepAlive: true, maxSockets: 64 };
      this.agent = this.base.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    }
  }

  get configured(): boolean {
    return this.base !== null;
  }

  close(): void {
    this.agent?.destroy();
  }

  async forward(req: ForwardedRequest): Promise<Reply> {
    if (this.base === null) throw notConfigured('adk.baseUrl');
    // `..` (in any encoding) would climb out of a base URL that has a path; nothing legitimate needs it.
    const rest = checkedPath(req.rest, 'the forwarded path');
    const headers: Record<string, string> = { 'x-historian-user': headerSafe(req.user) };
    for (const name of FORWARDED_HEADERS) if (req.headers[name] !== undefined) headers[name] = req.headers[name];
    if (req.body !== null) headers['content-length'] = String(req.body.byteLength);
    const basePath = this.base.pathname.replace(/\/+$/, '');
    const path = `${basePath}/${rest}${req.rawQuery ? `?${req.rawQuery}` : ''}`;
    const where = `adk at ${this.base.origin}`;
    const { status, contentType, body } = await this.exchange(req, path, headers, where);
    if (status >= 400) return upstreamRefusal('adk', status, upstreamMessage(parsed(body, contentType)));
    if (status === 204 || status === 304) return { status };
    return { status, contentType: contentType ?? 'application/octet-stream', body };
  }

  private exchange(req: ForwardedRequest, path: string, headers: Record<string, string>, where: string): Promise<{ status: number; contentType: string | undefined; body: Buffer }> {
    const base = this.base!;
    return new Promise((resolve, reject) => {
      let request: http.ClientRequest;
      try {
        request = (base.protocol === 'https:' ? https : http).request(
          { protocol: base.protocol, hostname: base.hostname, port: base.port || undefined, method: req.method, path, headers, agent: this.agent! },
          (response) => {
            const chunks: Buffer[] = [];
            let bytes = 0;
            response.on('data', (chunk: Buffer) => {
              bytes += chunk.length;
              if (bytes > MAX_RESPONSE_BYTES) return void request.destroy(badGateway(`${where} answered more than ${MAX_RESPONSE_BYTES} bytes`));
              chunks.push(chunk);
            });
            response.on('end', () => resolve({ status: response.statusCode ?? 0, contentType: response.headers['content-type'], body: Buffer.concat(chunks) }));
            response.on('error', (err) => request.destroy(err));
          },
        );
      } catch (err) {
        // Node refuses a path with characters a request line cannot carry.
        return reject(badRequest(`the forwarded path or query cannot be sent: ${(err as Error).message}`));
      }
      const timer = setTimeout(() => request.destroy(badGateway(`${where} did not answer within ${this.timeoutMs} ms (adk.timeoutMs)`)), this.timeoutMs);
      const onAbort = () => request.destroy(badGateway('the caller went away'));
      req.signal.addEventListener('abort', onAbort, { once: true });
      request.on('close', () => {
        clearTimeout(timer);
        req.signal.removeEventListener('abort', onAbort);
      });
      request.on('error', (err) => reject(err instanceof ServiceError ? err : badGateway(`${where} unreachable: ${networkReason(err)}`)));
      request.end(req.body ?? undefined);
    });
  }
}

/** The body of an error answer, parsed when it says it is JSON. */
function parsed(body: Buffer, contentType: string | undefined): unknown {
  const text = body.toString('utf8');
  if (!contentType?.includes('json')) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Header values are Latin-1 on the wire: an email outside ASCII goes percent-encoded. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}
