// `historian import`: a CSV (`time,tag,value`) or line protocol file, plain or gzip, or stdin,
// into one collection, through the running service's /svcapi/write. The file is read in chunks
// of whole lines; each chunk is parsed and checked here (a bad line stops the import naming its
// line, before its chunk is sent) and written as one request, all or nothing, a few requests in
// flight. A resume checkpoint (import-state.ts) records how far every chunk was acknowledged,
// so a rerun after an interruption carries on from there instead of sending it all again.

import { LineSeriesCache, type Precision } from '../../native-free-codecs/line-protocol.js';
import { parseCollectionId } from '../../shared/scope-path.js';
import type { CollectionScope } from '../../shared/scope.js';
import { abortError, okJson, replyProblem, request, requestWithRetry } from './http.js';
import { encodeChunk, type WriteBody } from './import-body.js';
import { EXPORT_MARKER, LineError, parseCsvChunk, parseExportLines, parseLineProtocolChunk, type ChunkPoints, type ParseContext } from './import-parse.js';
import { ImportSource, LongLineError } from './import-source.js';
import { identify, loadState, removeState, saveState, stateFileFor, type ImportState, type InputIdentity } from './import-state.js';
import type { Target } from './target-types.js';

export interface ImportOptions {
  /** The collection id as the API names it: `organization/site/unit/grid`. */
  collection: string;
  /** A file path, or '-' for stdin (which cannot resume). */
  input: string;
  /** 'auto' (default): by extension (.csv; .lp, .txt, .line; .gz stripped first), else by the first line. */
  format?: 'csv' | 'lp' | 'auto';
  /** Unit of line protocol timestamps: ns (default, as InfluxDB), us, ms, s. */
  precision?: Precision;
  /** Create the collection when it does not exist (else that is an error). */
  createCollection?: boolean;
  /** Where the resume state goes; default beside the input (`<input>.import-state`). */
  stateDir?: string;
  /** Requests in flight at once (default 3). */
  concurrency?: number;
  /** Text per request, cut at a line break (default 2 MiB). */
  chunkBytes?: number;
  /** The service's storage.minTimestampMs (default 10^11): earlier times are refused as epoch seconds. */
  minTimestampMs?: number;
  /** `/svcapi/write` (default: fsynced before it answers, so the checkpoint is durable) or `/svcapi/write_fast`. */
  durability?: 'sync' | 'fast';
  /** After each acknowledged request: bytes read of the file (compressed, for gzip), its size, points written. */
  onProgress?(bytesDone: number, bytesTotal: number | undefined, points: number): void;
  /** Things a person should hear: a resume, a checkpoint that does not fit the input. */
  onNotice?(message: string): void;
  signal?: AbortSignal;
}

export interface ImportResult {
  /** What the input was read as: CSV, line protocol (ingest tag names), or a historian line protocol export (tag names whole). */
  format: 'csv' | 'lp' | 'lp-export';
  /** Lines, points and text bytes of the whole input, an earlier interrupted run's share included. */
  lines: number;
  points: number;
  bytes: number;
  /** Text offset this run started from (0 unless it resumed). */
  resumedFromByte: number;
  /** Write requests this run sent. */
  requests: number;
}

type Reading = ImportResult['format'];

const DEFAULT_CHUNK_BYTES = 2 << 20;
/** The service's request ring takes bodies up to 4 MiB by default; a body above this is split in two. */
const MAX_BODY_BYTES = 3 << 20;
const MAX_LINE_BYTES = 1 << 20;
const DEFAULT_MIN_TIMESTAMP_MS = 1e11;
const LF = 0x0a;

export async function importData(target: Target, opts: ImportOptions): Promise<ImportResult> {
  const scope = collectionScope(opts.collection);
  checkOptions(opts);
  const stdin = opts.input === '-';
  let identity: InputIdentity | null = null;
  let stateFile: string | null = null;
  let resumed: ImportState | null = null;
  if (!stdin) {
    identity = await identify(opts.input).catch((err: NodeJS.ErrnoException) => {
      throw new Error(`cannot read ${opts.input}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
    });
    stateFile = stateFileFor(opts.input, opts.stateDir);
    const loaded = loadState(stateFile, identity, opts.collection);
    const why = loaded.state ? readChanged(opts, loaded.state) : loaded.why;
    if (loaded.state && why === null) resumed = loaded.state;
    else if (why) opts.onNotice?.(`${why}: starting from the beginning`);
  }
  await ensureCollection(target, opts, scope);
  const source = await ImportSource.open(opts.input, resumed?.ackedBytes ?? 0);
  if (resumed) opts.onNotice?.(`resuming the interrupted import of ${opts.input} at byte ${resumed.ackedBytes} (line ${resumed.lines + 1})`);
  const run = new ImportRun(target, opts, scope, source, stateFile, identity, resumed);
  try {
    return await run.run();
  } finally {
    source.close();
  }
}

const PRECISIONS = ['ns', 'us', 'ms', 's'];

function checkOptions(opts: ImportOptions): void {
  if (opts.precision !== undefined && !PRECISIONS.includes(opts.precision)) throw new Error(`precision must be one of ${PRECISIONS.join(', ')}, got ${JSON.stringify(opts.precision)}`);
  if (opts.format !== undefined && !['csv', 'lp', 'auto'].includes(opts.format)) throw new Error(`format must be csv, lp or auto, got ${JSON.stringify(opts.format)}`);
  for (const name of ['concurrency', 'chunkBytes'] as const) {
    const value = opts[name];
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer, got ${value}`);
  }
}

/** Why an interrupted import cannot go on as this one asks (another format or precision), or null. */
function readChanged(opts: ImportOptions, state: ImportState): string | null {
  const asked = opts.format === 'csv' || opts.format === 'lp' ? opts.format : null;
  if (asked !== null && (asked === 'csv') !== (state.format === 'csv')) return `the interrupted import read ${opts.input} as ${state.format}, not ${asked}`;
  if (state.format === 'lp' && state.precision !== (opts.precision ?? 'ns')) return `the interrupted import read timestamps in ${state.precision}, not ${opts.precision ?? 'ns'}`;
  return null;
}

function collectionScope(collection: string): CollectionScope {
  try {
    return parseCollectionId(collection);
  } catch (err) {
    throw new Error(`collection ${JSON.stringify(collection)}: ${(err as Error).message}`);
  }
}

/** The collection must exist (the write routes refuse a missing one); created on request. */
async function ensureCollection(target: Target, opts: ImportOptions, scope: CollectionScope): Promise<void> {
  const reply = await request(target, 'GET', `/svcapi/collection/${encodeURIComponent(opts.collection)}`, { signal: opts.signal });
  if (reply.status === 200) return;
  if (reply.status !== 404) throw new Error(`collection ${opts.collection}: ${replyProblem(reply)}`);
  if (!opts.createCollection) throw new Error(`collection ${opts.collection} not found (or not visible to these credentials); create it first, or import with the option to create it`);
  const created = okJson<{ success?: boolean; error?: string }>(
    await request(target, 'POST', '/svcapi/create_collection', { body: JSON.stringify(scope), contentType: 'application/json', signal: opts.signal }),
    `creating collection ${opts.collection}`,
  );
  if (created.success === false) throw new Error(`creating collection ${opts.collection}: ${created.error ?? 'refused'}`);
}

/** A chunk sent or about to be: where its text ends, its last line, its points. */
interface Pending {
  end: number;
  lastLine: number;
  points: number;
  done: boolean;
}

class ImportRun {
  private reading: Reading | null;
  private readonly seriesCache = new LineSeriesCache();
  private readonly concurrency: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Chunks in input order not yet part of the acknowledged prefix. */
  private readonly pending: Pending[] = [];
  private failure: Error | null = null;
  private requests = 0;
  // The acknowledged prefix: what the checkpoint records.
  private ackedBytes: number;
  private ackedLines: number;
  private ackedPoints: number;
  // What has been read and parsed, sent or not.
  private readLines: number;
  private readBytes: number;

  constructor(
    private readonly target: Target,
    private readonly opts: ImportOptions,
    private readonly scope: CollectionScope,
    private readonly source: ImportSource,
    private readonly stateFile: string | null,
    private readonly identity: InputIdentity | null,
    private readonly resumed: ImportState | null,
  ) {
    this.reading = (resumed?.format as Reading | undefined) ?? null;
    this.concurrency = Math.max(1, opts.concurrency ?? 3);
    this.ackedBytes = this.readBytes = resumed?.ackedBytes ?? 0;
    this.ackedLines = this.readLines = resumed?.lines ?? 0;
    this.ackedPoints = resumed?.points ?? 0;
  }

  async run(): Promise<ImportResult> {
    const { opts } = this;
    const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    try {
      for await (const chunk of this.source.chunks(chunkBytes, Math.max(MAX_LINE_BYTES, chunkBytes))) {
        this.check();
        this.reading ??= readingOf(opts, chunk.data);
        await this.take(chunk.data, chunk.start, this.readLines + 1);
      }
      await this.drain();
      this.check();
    } catch (err) {
      await this.drain();
      this.checkpoint();
      throw this.explain(err);
    }
    if (this.stateFile) removeState(this.stateFile);
    return {
      format: this.reading ?? 'csv',
      lines: this.readLines,
      points: this.ackedPoints,
      bytes: this.readBytes,
      resumedFromByte: this.resumed?.ackedBytes ?? 0,
      requests: this.requests,
    };
  }

  /** Parses one chunk of whole lines and sends it (split in two when its body is too large). */
  private async take(data: Buffer, start: number, firstLine: number): Promise<void> {
    const lines = countLines(data);
    const nul = data.indexOf(0);
    if (nul >= 0) throw new LineError(firstLine + countLines(data.subarray(0, nul + 1)) - 1, 'a NUL byte: binary data, not CSV or line protocol text');
    const points = this.parse(data, { firstLine, minTimestampMs: this.opts.minTimestampMs ?? DEFAULT_MIN_TIMESTAMP_MS });
    const body = points.pointCount > 0 ? encodeChunk(this.scope, points) : null;
    if (body && body.body.byteLength > MAX_BODY_BYTES && lines > 1) {
      const cut = middleLineBreak(data);
      await this.take(data.subarray(0, cut), start, firstLine);
      await this.take(data.subarray(cut), start + cut, firstLine + countLines(data.subarray(0, cut)));
      return;
    }
    this.readLines = firstLine + lines - 1;
    this.readBytes = start + data.length;
    const entry: Pending = { end: this.readBytes, lastLine: this.readLines, points: points.pointCount, done: body === null };
    this.pending.push(entry);
    if (body === null) return this.advance();
    while (this.inFlight.size >= this.concurrency) await Promise.race(this.inFlight);
    this.check();
    const sending = this.send(body, firstLine, this.readLines).then(
      () => {
        entry.done = true;
        this.advance();
      },
      (err: Error) => {
        this.failure ??= err;
      },
    );
    this.inFlight.add(sending);
    void sending.finally(() => this.inFlight.delete(sending));
  }

  private parse(data: Buffer, ctx: ParseContext): ChunkPoints {
    switch (this.reading) {
      case 'csv':
        return parseCsvChunk(data, ctx);
      case 'lp-export':
        return parseExportLines(data, ctx);
      default:
        return parseLineProtocolChunk(data, ctx, this.opts.precision ?? 'ns', this.scope, this.seriesCache);
    }
  }

  private async send(body: WriteBody, firstLine: number, lastLine: number): Promise<void> {
    this.requests++;
    const path = this.opts.durability === 'fast' ? '/svcapi/write_fast' : '/svcapi/write';
    const lines = firstLine === lastLine ? `line ${firstLine}` : `lines ${firstLine}-${lastLine}`;
    const reply = await requestWithRetry(this.target, 'POST', path, { body: body.body, contentType: body.contentType, signal: this.opts.signal });
    if (reply.status === 413) throw new Error(`the service refused the request of ${lines} as too large (${body.body.byteLength} bytes; storage.requestRingBytes); import with smaller chunks`);
    if (reply.status !== 200) throw new Error(`writing ${lines}: ${replyProblem(reply)}`);
    const outcome = JSON.parse(reply.body.toString('utf8')) as { success?: boolean; error?: string };
    // Refused whole: none of these lines was written.
    if (outcome.success !== true) throw new Error(`the service refused ${lines} (none of them written): ${outcome.error ?? 'no reason given'}`);
  }

  /** Moves the acknowledged prefix over the chunks done in order, and records it. */
  private advance(): void {
    let moved = false;
    while (this.pending.length > 0 && this.pending[0].done) {
      const entry = this.pending.shift()!;
      this.ackedBytes = entry.end;
      this.ackedLines = entry.lastLine;
      this.ackedPoints += entry.points;
      moved = true;
    }
    if (!moved) return;
    this.checkpoint();
    this.opts.onProgress?.(this.source.rawBytesRead, this.source.size, this.ackedPoints);
  }

  private checkpoint(): void {
    if (!this.stateFile || !this.identity || this.reading === null) return;
    if (this.ackedBytes === (this.resumed?.ackedBytes ?? 0)) return; // nothing new to record
    saveState(this.stateFile, {
      version: 1,
      input: this.identity,
      collection: this.opts.collection,
      format: this.reading,
      precision: this.opts.precision ?? 'ns',
      ackedBytes: this.ackedBytes,
      lines: this.ackedLines,
      points: this.ackedPoints,
    });
  }

  /** Throws the first failure of a request, or the abort. */
  private check(): void {
    if (this.failure) throw this.failure;
    if (this.opts.signal?.aborted) throw abortError(this.opts.signal);
  }

  private async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** An error naming the input, and the line where a line is to blame. */
  private explain(err: unknown): Error {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error.name === 'AbortError') return error;
    const where = this.opts.input === '-' ? 'stdin' : this.opts.input;
    if (error instanceof LineError) return new Error(`${where}: ${error.message}`, { cause: error });
    if (error instanceof LongLineError) return new Error(`${where}: line ${this.readLines + 1}: ${error.message}`, { cause: error });
    if ((error as NodeJS.ErrnoException).code?.startsWith('Z_')) return new Error(`${where}: not a valid gzip file (${error.message})`, { cause: error });
    return new Error(`${where}: ${error.message}`, { cause: error });
  }
}

/** How the input is read: the option, the extension, else the first line. A historian export announces itself. */
function readingOf(opts: ImportOptions, first: Buffer): Reading {
  const head = first.subarray(0, Math.min(first.length, 4096)).toString('utf8').replace(/^\uFEFF/, '');
  const firstLine = head.split('\n', 1)[0].replace(/\r$/, '');
  const lp = (): Reading => (firstLine.startsWith(EXPORT_MARKER) ? 'lp-export' : 'lp');
  if (opts.format === 'csv') return 'csv';
  if (opts.format === 'lp') return lp();
  const name = opts.input.toLowerCase().replace(/\.gz$/, '');
  if (name.endsWith('.csv')) return 'csv';
  if (/\.(lp|txt|line|influx)$/.test(name)) return lp();
  // A header, or a time (epoch ms or a date) then a comma: CSV. Anything else is line protocol.
  if (/^"?time"?,"?tag"?,"?value"?$/i.test(firstLine.trim()) || /^"?([0-9]+|[0-9]{4}-[0-9]{2}-[0-9]{2}[^,]*)"?,/.test(firstLine)) return 'csv';
  return lp();
}

function countLines(data: Buffer): number {
  let n = 0;
  for (let i = data.indexOf(LF); i >= 0; i = data.indexOf(LF, i + 1)) n++;
  return data.length > 0 && data[data.length - 1] !== LF ? n + 1 : n;
}

/** The offset just past the line break nearest the middle of a text of several lines. */
function middleLineBreak(data: Buffer): number {
  const mid = data.length >> 1;
  const after = data.indexOf(LF, mid);
  if (after >= 0 && after + 1 < data.length) return after + 1;
  return data.lastIndexOf(LF, mid - 1) + 1;
}
