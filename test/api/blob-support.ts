// Streaming clients for the blob and attachment tests: uploads generated as they are sent (never
// whole in the test's memory either), downloads hashed as they arrive, read at a chosen pace or
// dropped part-way, and the service's own memory figures.

import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { TestService } from './harness.js';

/** `size` deterministic pseudo-random bytes from `seed`, in blocks (the same bytes every time). */
export function* generated(size: number, seed: number, blockBytes = 256 * 1024): Generator<Buffer> {
  let state = seed >>> 0 || 1;
  for (let sent = 0; sent < size; sent += blockBytes) {
    const block = Buffer.allocUnsafe(Math.min(blockBytes, size - sent));
    for (let i = 0; i + 4 <= block.length; i += 4) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      block.writeUInt32LE(state >>> 0, i);
    }
    for (let i = block.length - (block.length % 4); i < block.length; i++) block[i] = i & 0xff;
    yield block;
  }
}

export const sha256Of = (chunks: Iterable<Buffer>): string => {
  const hash = crypto.createHash('sha256');
  for (const chunk of chunks) hash.update(chunk);
  return hash.digest('hex');
};

export interface Upload {
  status: number;
  body: any;
  text: string;
}

export interface UploadOptions {
  token: string;
  method?: string;
  contentType?: string;
  /** Declared length; omitted sends the body chunked. */
  contentLength?: number | null;
  /** Destroy the connection after sending this many bytes. */
  vanishAfter?: number;
  /** Send the head only and wait for the reply (a refusal that must come before any body byte is read). */
  headOnly?: boolean;
}

/** Sends `chunks` as a request body with backpressure; resolves with the reply (status 0 when the connection was dropped). */
export function upload(svc: TestService, urlPath: string, chunks: Iterable<Buffer>, opts: UploadOptions): Promise<Upload> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, 'content-type': opts.contentType ?? 'application/octet-stream' };
    if (opts.contentLength !== undefined && opts.contentLength !== null) headers['content-length'] = String(opts.contentLength);
    // Kept alive, as Node's default agent does: the server reads on after refusing a body, so the
    // refusal is read before a write could fail (see uploadWithoutEnd in ingest-support.ts).
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port: svc.port, method: opts.method ?? 'PUT', path: urlPath, ca: svc.ca, agent, headers });
    let settled = false;
    const settle = (u: Upload) => {
      if (settled) return;
      settled = true;
      req.destroy();
      agent.destroy();
      resolve(u);
    };
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        settle({ status: res.statusCode ?? 0, body, text });
      });
      res.on('error', () => settle({ status: res.statusCode ?? 0, body: undefined, text: '' }));
    });
    req.on('error', () => settle({ status: 0, body: undefined, text: '' }));
    if (opts.headOnly) {
      req.flushHeaders();
      return;
    }
    const iterator = chunks[Symbol.iterator]();
    let sent = 0;
    const pump = () => {
      for (;;) {
        if (settled || req.destroyed) return;
        if (opts.vanishAfter !== undefined && sent >= opts.vanishAfter) {
          req.destroy();
          settle({ status: 0, body: undefined, text: '' });
          return;
        }
        const next = iterator.next();
        if (next.done) {
          req.end();
          return;
        }
        sent += next.value.length;
        if (!req.write(next.value)) {
          req.once('drain', pump);
          return;
        }
      }
    };
    pump();
  });
}

export interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  size: number;
  sha256: string;
  /** The body itself, when asked to keep it. */
  bytes: Buffer | null;
  /** The body ended normally. */
  complete: boolean;
}

export interface DownloadOptions {
  token: string;
  headers?: Record<string, string>;
  /** Keep the bytes (small downloads only). */
  keep?: boolean;
  /** Pause reading for `pauseMs` after every `pauseEvery` bytes: a slow reader. */
  pauseEvery?: number;
  pauseMs?: number;
  /** Destroy the connection after this many bytes. */
  vanishAfter?: number;
}

/** GETs `urlPath` on its own connection, hashing the body as it arrives. */
export function download(svc: TestService, urlPath: string, opts: DownloadOptions): Promise<Download> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', servername: 'localhost', port: svc.port, method: 'GET', path: urlPath, ca: svc.ca, agent: false,
      headers: { authorization: `Bearer ${opts.token}`, ...opts.headers },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const hash = crypto.createHash('sha256');
      const kept: Buffer[] = [];
      let size = 0;
      let sincePause = 0;
      let finished = false;
      const done = (complete: boolean) =>
        !finished && (finished = true) &&
        resolve({ status: res.statusCode ?? 0, headers: res.headers, size, sha256: hash.digest('hex'), bytes: opts.keep ? Buffer.concat(kept) : null, complete });
      res.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        size += chunk.length;
        sincePause += chunk.length;
        if (opts.keep) kept.push(chunk);
        if (opts.vanishAfter !== undefined && size >= opts.vanishAfter) {
          req.destroy();
          done(false);
          return;
        }
        if (opts.pauseEvery !== undefined && sincePause >= opts.pauseEvery) {
          sincePause = 0;
          res.pause();
          setTimeout(() => res.resume(), opts.pauseMs ?? 10);
        }
      });
      res.on('end', () => done(res.complete));
      res.on('error', () => done(false));
    });
    req.end();
  });
}

/** Peak (VmHWM) and current (VmRSS) resident memory of a process, in bytes. */
export function memoryOf(pid: number): { peak: number; rss: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { peak: field('VmHWM'), rss: field('VmRSS') };
}

/** Names of the content files under a data dir's blob store, and of its temporary uploads. */
export function blobFiles(dataDir: string): { contents: string[]; temporary: string[] } {
  const root = path.join(dataDir, 'blobs');
  const contents: string[] = [];
  const shaDir = path.join(root, 'sha256');
  if (fs.existsSync(shaDir)) for (const prefix of fs.readdirSync(shaDir)) contents.push(...fs.readdirSync(path.join(shaDir, prefix)));
  const tmp = path.join(root, 'tmp');
  return { contents: contents.sort(), temporary: fs.existsSync(tmp) ? fs.readdirSync(tmp) : [] };
}
