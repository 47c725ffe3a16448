// Helpers for the ingest API tests (ingest.test.ts): request bodies in every write format, and
// uploads whose body never ends, to see that a too-large upload is refused from its headers
// (Content-Length) or while it streams (chunked), not after the whole body has been read.

import https from 'node:https';
import { once } from 'node:events';
import { gzipSync } from 'node:zlib';
import { pack } from 'msgpackr';
import { encodeBinaryBatch } from '../../native-free-codecs/write-body.js';
import type { TestService } from './harness.js';

export interface Payload {
  bytes: Buffer;
  contentType: string;
  contentEncoding?: 'gzip';
}

export const jsonBody = (value: unknown): Payload => ({ bytes: Buffer.from(JSON.stringify(value)), contentType: 'application/json' });
/** JSON text sent as is (for numbers such as 1e999 that JSON.stringify cannot write). */
export const jsonText = (text: string): Payload => ({ bytes: Buffer.from(text), contentType: 'application/json' });
export const msgpackBody = (value: unknown): Payload => ({ bytes: pack(value), contentType: 'application/msgpack' });
export const hsw1Body = (
  scope: Record<string, string>,
  timestamps: number[],
  columns: Array<{ name: string; values: number[] }>,
): Payload => ({ bytes: Buffer.from(encodeBinaryBatch(scope, timestamps, columns)), contentType: 'application/octet-stream' });
export const gzipped = (p: Payload): Payload => ({ ...p, bytes: gzipSync(p.bytes), contentEncoding: 'gzip' });

export interface StreamAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** Body bytes written before the answer came. */
  sentBytes: number;
}

/**
 * POSTs `chunks` as the body and never ends it; resolves with the answer the server gives
 * meanwhile, and fails when none comes within `timeoutMs` (a server that waits for the end of
 * the body before refusing it). With `contentLength` the request announces that length (and
 * `chunks` may be empty: only the headers are sent); without it the body goes chunked.
 */
export function uploadWithoutEnd(
  svc: TestService,
  urlPath: string,
  opts: { token?: string; contentType?: string; contentLength?: number; chunks?: Buffer[]; timeoutMs?: number },
): Promise<StreamAnswer> {
  const headers: Record<string, string> = { 'content-type': opts.contentType ?? 'application/json' };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.contentLength !== undefined) headers['content-length'] = String(opts.contentLength);
  const timeoutMs = opts.timeoutMs ?? 20_000;
  // A kept-alive connection, as Node's default agent makes: the server reads on after refusing a
  // body so the client can read the refusal. A request saying `Connection: close` (agent: false)
  // is closed at once after the answer, and a write racing that close fails with EPIPE before
  // the answer is read.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  return new Promise<StreamAnswer>((resolve, reject) => {
    let answered = false;
    let sentBytes = 0;
    const req = https.request({
      host: '127.0.0.1',
      servername: 'localhost',
      port: svc.port,
      method: 'POST',
      path: urlPath,
      headers,
      ca: svc.ca,
      agent,
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms after ${sentBytes} body bytes were sent and the body was left open`));
    }, timeoutMs);
    req.on('response', (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      const done = () => {
        clearTimeout(timer);
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sentBytes });
        req.destroy();
      };
      res.on('end', done);
      res.on('error', done);
    });
    req.on('error', (err) => {
      if (answered) return;
      clearTimeout(timer);
      reject(new Error(`upload failed before an answer (${sentBytes} body bytes sent): ${err.message}`));
    });
    req.flushHeaders();
    void (async () => {
      for (const chunk of opts.chunks ?? []) {
        if (answered || req.destroyed) return;
        sentBytes += chunk.length;
        if (!req.write(chunk)) await once(req, 'drain').catch(() => {});
      }
    })();
  }).finally(() => agent.destroy());
}
