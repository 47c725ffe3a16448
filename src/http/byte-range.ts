// Downloads of stored files (blobs, attachments, backups): a whole file, one byte range of it
// (206, RFC 9110 `Range: bytes=`), or 304 when the client's `If-None-Match` names its ETag.
// The bytes are read from disk as the client takes them, so a file of any size costs one buffer.

import fs from 'node:fs';
import { ServiceError } from '../../shared/errors.js';
import type { Reply, ResponseStream } from './route.js';

const READ_CHUNK_BYTES = 1 << 20;

export interface Downloadable {
  size: number;
  contentType: string;
  /** Quoted strong ETag. */
  etag: string;
  /** More headers of the answer (a file name, a checksum). */
  headers?: Record<string, string>;
  /** Writes bytes [start, end) to `out`. */
  stream(start: number, end: number, out: ResponseStream): Promise<void>;
}

/** The answer to a GET of `file` with the request's `range` and `if-none-match` headers. */
export function downloadReply(requestHeaders: Readonly<Record<string, string>>, file: Downloadable): Reply {
  const headers: Record<string, string> = { ...file.headers, etag: file.etag, 'accept-ranges': 'bytes' };
  const ifNoneMatch = requestHeaders['if-none-match'];
  if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, file.etag)) return { status: 304, headers };
  const range = parseRange(requestHeaders.range, file.size);
  if (range === 'unsatisfiable') {
    throw new ServiceError('RANGE_NOT_SATISFIABLE', `no byte of the range is within the ${file.size} bytes of the content`, { headers: { 'content-range': `bytes */${file.size}` } });
  }
  const [start, end] = range ?? [0, file.size];
  if (range) headers['content-range'] = `bytes ${start}-${end - 1}/${file.size}`;
  return {
    status: range ? 206 : 200,
    contentType: file.contentType,
    headers,
    streamLength: end - start,
    stream: (out) => file.stream(start, end, out),
  };
}

export function etagMatches(header: string, etag: string): boolean {
  return header.split(',').some((part) => {
    const tag = part.trim().replace(/^W\//, '');
    return tag === '*' || tag === etag;
  });
}

/**
 * A single `bytes=` range as [start, end) within `size`; null to send everything (no header, or
 * one this server does not honour: several ranges, another unit, bad syntax; RFC 9110 lets a
 * server ignore Range); 'unsatisfiable' when no byte of it lies within the content.
 */
export function parseRange(header: string | undefined, size: number): [number, number] | null | 'unsatisfiable' {
  if (header === undefined) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - suffix), size];
  }
  const start = Number(match[1]);
  const last = match[2] === '' ? Infinity : Number(match[2]);
  if (last < start) return null;
  if (start >= size) return 'unsatisfiable';
  return [start, Math.min(last, size - 1) + 1];
}

/** Bytes [start, end) of the file at `path` to `out`, waiting while the client is behind; stops when it goes away. */
export async function streamFileRange(path: string, start: number, end: number, out: ResponseStream): Promise<void> {
  const file = await fs.promises.open(path, 'r');
  try {
    // One buffer for the whole download: out.write copies only what the socket does not take at once.
    const buffer = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, Math.max(end - start, 1)));
    let position = start;
    while (position < end && !out.aborted) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(buffer.length, end - position), position);
      if (bytesRead === 0) throw new Error(`${path} is shorter than expected`);
      position += bytesRead;
      const wait = out.write(buffer.subarray(0, bytesRead));
      if (wait) await wait;
    }
  } finally {
    await file.close();
  }
}
