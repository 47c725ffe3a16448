// The bytes of an import: a file or stdin, gunzipped when they start with gzip's magic bytes,
// cut into chunks of whole lines of about `chunkBytes` (memory stays bounded whatever the file's
// size). A file is read from a byte offset when an import resumes; a gzip file is decompressed
// from its start and the text before the offset skipped (gzip cannot seek).

import fs from 'node:fs';
import { pipeline, Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';

export interface TextChunk {
  /** Whole lines (the input's last line may lack its line break). */
  data: Buffer;
  /** Offset of data[0] in the input's text (decompressed, for gzip). */
  start: number;
}

export class LongLineError extends Error {
  constructor(readonly maxLineBytes: number) {
    super(`longer than ${maxLineBytes} bytes without a line break: not CSV or line protocol text?`);
    this.name = 'LongLineError';
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];
const READ_BYTES = 1 << 20;
const LF = 0x0a;

export class ImportSource {
  /** Bytes read from the file or stdin so far (compressed ones, for gzip): what a progress bar shows. */
  rawBytesRead = 0;

  private constructor(
    private readonly raw: Readable,
    readonly gzip: boolean,
    /** The file's size; undefined for stdin. */
    readonly size: number | undefined,
    private readonly fromByte: number,
  ) {}

  /** Opens `input` ('-': stdin) to be read from text offset `fromByte`. */
  static async open(input: string, fromByte: number): Promise<ImportSource> {
    if (input === '-') {
      // stdin cannot be peeked without reading: its first chunk is put back in front.
      const stdin = process.stdin;
      const first = await firstBytes(stdin);
      const raw = Readable.from(prepend(first, stdin));
      return new ImportSource(raw, isGzip(first), undefined, 0);
    }
    const handle = await fs.promises.open(input, 'r');
    let head: Buffer;
    let size: number;
    try {
      size = (await handle.stat()).size;
      const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
      head = buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
    const gzip = isGzip(head);
    const start = gzip ? 0 : fromByte;
    const source = new ImportSource(fs.createReadStream(input, { start, highWaterMark: READ_BYTES }), gzip, size, fromByte);
    source.rawBytesRead = start;
    return source;
  }

  /** Chunks of whole lines from the resume offset; throws LongLineError for a line over `maxLineBytes`. */
  async *chunks(chunkBytes: number, maxLineBytes: number): AsyncGenerator<TextChunk> {
    let offset = this.gzip ? 0 : this.fromByte;
    let skip = this.gzip ? this.fromByte : 0;
    let carry: Buffer[] = [];
    let carried = 0;
    for await (const piece of this.text()) {
      let buf = piece as Buffer;
      if (skip > 0) {
        const dropped = Math.min(skip, buf.length);
        buf = buf.subarray(dropped);
        skip -= dropped;
        offset += dropped;
        if (buf.length === 0) continue;
      }
      carry.push(buf);
      carried += buf.length;
      if (carried < chunkBytes) continue;
      const joined = carry.length === 1 ? carry[0] : Buffer.concat(carry, carried);
      let p = 0;
      while (joined.length - p >= chunkBytes) {
        // The last line break within chunkBytes; a longer line makes a chunk of its own.
        let cut = joined.lastIndexOf(LF, p + chunkBytes - 1) + 1;
        if (cut <= p) cut = joined.indexOf(LF, p + chunkBytes) + 1;
        if (cut === 0) break; // no line break yet: read more
        yield { data: joined.subarray(p, cut), start: offset };
        offset += cut - p;
        p = cut;
      }
      // What is left has no line break when it is chunkBytes or more (see above).
      if (joined.length - p > maxLineBytes) throw new LongLineError(maxLineBytes);
      // Copied, so the chunks handed out can be dropped whole.
      carry = p < joined.length ? [Buffer.from(joined.subarray(p))] : [];
      carried = joined.length - p;
    }
    if (carried === 0) return;
    const rest = carry.length === 1 ? carry[0] : Buffer.concat(carry, carried);
    if (rest.length - (rest.lastIndexOf(LF) + 1) > maxLineBytes) throw new LongLineError(maxLineBytes);
    yield { data: rest, start: offset };
  }

  /** Stops reading (an import that failed or was aborted). */
  close(): void {
    this.raw.destroy();
  }

  /** The input's text, counting the bytes read (compressed ones for gzip). */
  private text(): AsyncIterable<Buffer> {
    const count = (b: Buffer) => (this.rawBytesRead += b.length);
    const raw = this.raw;
    if (!this.gzip) {
      return (async function* () {
        for await (const b of raw) {
          count(b as Buffer);
          yield b as Buffer;
        }
      })();
    }
    const counter = new Transform({
      transform(b: Buffer, _encoding, done) {
        count(b);
        done(null, b);
      },
    });
    const gunzip = zlib.createGunzip({ chunkSize: 256 * 1024 });
    // Errors reach the reader through the iteration of gunzip; pipeline destroys the rest.
    pipeline(raw, counter, gunzip, () => {});
    return gunzip;
  }
}

function isGzip(head: Uint8Array): boolean {
  return head.length >= 2 && head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
}

/** The first bytes of a stream (empty at its end), read without ending its iteration. */
async function firstBytes(stream: Readable): Promise<Buffer> {
  for (;;) {
    const chunk = stream.read() as Buffer | string | null;
    if (chunk !== null) return typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (stream.readableEnded || stream.destroyed) return Buffer.alloc(0);
    await new Promise<void>((resolve) => {
      const done = () => {
        stream.off('readable', done);
        stream.off('end', done);
        stream.off('error', done);
        resolve();
      };
      stream.on('readable', done);
      stream.on('end', done);
      stream.on('error', done);
    });
  }
}

async function* prepend(first: Buffer, rest: Readable): AsyncGenerator<Buffer> {
  if (first.length > 0) yield first;
  for await (const chunk of rest) yield chunk as Buffer;
}
