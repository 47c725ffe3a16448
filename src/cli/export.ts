// `historian export`: the raw points of a collection's tags over a range, as CSV `time,tag,value`
// (the service's own CSV rows, passed through) or as line protocol that `historian import` reads
// back with the same tag names (`<tag> value=<number> <ns>` after a marker line; tag names whole,
// since not every name could come out of the ingest routes' `<measurement>.<field>` mapping).
//
// The tags are the series route's matches of the names or globs given; they are asked in
// batches from POST /svcapi/fast_query?format=csv, read as they stream, written to `out` at the
// pace it takes (backpressure: the service holds its query while we wait). When a reply is cut
// short (the service cuts a reader stalled past storage.resultStallTimeoutMs, or a query past
// storage.queryTimeoutMs), the batch is asked again from just after the last row written, so
// nothing is written twice or left out.

import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { parseCollectionId } from '../../shared/scope-path.js';
import type { CollectionScope } from '../../shared/scope.js';
import { abortError, okJson, openRequest, replyProblem, request, sleep } from './http.js';
import { EXPORT_MARKER, exportMeasurement } from './import-parse.js';
import { parseCsvTime, parseTimeOption } from './times.js';
import type { Target } from './target-types.js';

export interface ExportOptions {
  /** The collection id: `organization/site/unit/grid`. */
  collection: string;
  /** Tag names or globs (`*`, `?`, `\` escapes; case-sensitive) as GET /svcapi/series matches them; default every tag. */
  tags?: string[];
  /** Range, both ends included: epoch ms, RFC 3339, or relative (`now-1h`). Default everything (0 to 2^53-1 ms, future points too). */
  from?: number | string;
  to?: number | string;
  format: 'csv' | 'lp';
  /** CSV times as epoch ms (default) or ISO 8601 UTC with milliseconds. */
  timeFormat?: 'ms' | 'iso';
  out: NodeJS.WritableStream;
  /** After each piece of a reply: points and series written so far. */
  onProgress?(points: number, series: number): void;
  signal?: AbortSignal;
}

export interface ExportResult {
  /** Points written. */
  points: number;
  /** Tags with at least one point written. */
  series: number;
  /** Tags asked (the matches of `tags`). */
  tags: number;
  /** Patterns of `tags` that matched no series. */
  unmatched: string[];
  /** Points not written because their value is not a finite number (NaN or ±Inf from a Prometheus remote write): neither format can carry them back in. */
  skipped: number;
  /** Query requests sent (more than the batches when a reply was cut short and asked again). */
  requests: number;
}

const MAX_SERIES = 100_000;
const MAX_MS = 9007199254740991;
const BATCH_TAGS = 500;
/** Output is handed to `out` in pieces of about this size. */
const WRITE_BYTES = 64 * 1024;
/** Replies cut short in a row with nothing written in between before the export gives up. */
const MAX_FRUITLESS_RETRIES = 5;
const BUSY_PAUSE_MS = 500;

export async function exportData(target: Target, opts: ExportOptions): Promise<ExportResult> {
  let scope: CollectionScope;
  try {
    scope = parseCollectionId(opts.collection);
  } catch (err) {
    throw new Error(`collection ${JSON.stringify(opts.collection)}: ${(err as Error).message}`);
  }
  const from = parseTimeOption(opts.from ?? 0, 'from');
  const to = parseTimeOption(opts.to ?? MAX_MS, 'to');
  if (to < from) throw new Error(`the range ends (${to}) before it starts (${from})`);
  const { tags, unmatched } = await resolveTags(target, opts, opts.tags ?? ['*']);
  const writer = new Output(opts);
  writer.push(opts.format === 'csv' ? 'time,tag,value\r\n' : `${EXPORT_MARKER}: <tag> value=<number> <time in ns>; historian import keeps the tag names whole\n`);
  for (let i = 0; i < tags.length; i += BATCH_TAGS) {
    await exportBatch(target, opts, scope, tags.slice(i, i + BATCH_TAGS), from, to, writer);
  }
  await writer.flush();
  return { points: writer.points, series: writer.series, tags: tags.length, unmatched, skipped: writer.skipped, requests: writer.requests };
}

/** The tags of the collection matching each pattern, in the series route's order (by name), each once. */
async function resolveTags(target: Target, opts: ExportOptions, patterns: string[]): Promise<{ tags: string[]; unmatched: string[] }> {
  const tags = new Set<string>();
  const unmatched: string[] = [];
  for (const pattern of patterns) {
    const query = new URLSearchParams({ collection: opts.collection, match: pattern, limit: String(MAX_SERIES) });
    const reply = await request(target, 'GET', `/svcapi/series?${query}`, { signal: opts.signal });
    if (reply.status === 404) throw new Error(`collection ${opts.collection} not found (or not visible to these credentials)`);
    const listing = okJson<{ series: Array<{ tag: string }>; has_more: boolean }>(reply, `listing the series of ${opts.collection} matching ${JSON.stringify(pattern)}`);
    if (listing.has_more) throw new Error(`more than ${MAX_SERIES} series of ${opts.collection} match ${JSON.stringify(pattern)}; export them in parts with narrower globs`);
    if (listing.series.length === 0) unmatched.push(pattern);
    for (const s of listing.series) tags.add(s.tag);
  }
  return { tags: [...tags], unmatched };
}

/** What is still to be read of a batch: a tag and the time its next point may have. */
interface Cursor {
  tag: string;
  start: number;
}

async function exportBatch(target: Target, opts: ExportOptions, scope: CollectionScope, tags: string[], from: number, to: number, out: Output): Promise<void> {
  let queue: Cursor[] = tags.map((tag) => ({ tag, start: from }));
  let fruitless = 0;
  while (queue.length > 0) {
    // One request asks the tags that share a start (all of them, unless a cut reply left one part read).
    const split = queue.findIndex((c) => c.start !== queue[0].start);
    const run = queue.slice(0, split < 0 ? queue.length : split);
    const before = out.points + out.skipped;
    const read = await queryRun(target, opts, scope, run, to, out);
    if (read.complete) {
      queue = queue.slice(run.length);
      continue;
    }
    // Cut short: the tags before the one being read are done; that one goes on after its last row.
    const at = read.tagIndex;
    queue = queue.slice(at);
    if (read.lastMs !== null) {
      if (read.lastMs >= to) queue.shift();
      else queue[0] = { tag: queue[0].tag, start: read.lastMs + 1 };
    }
    fruitless = out.points + out.skipped > before ? 0 : fruitless + 1;
    if (fruitless > MAX_FRUITLESS_RETRIES) throw new Error(`the service cut the export of ${run[0].tag} short ${fruitless} times in a row: ${read.problem}`);
  }
}

interface RunRead {
  complete: boolean;
  /** Index in the run of the tag whose rows came last, and the time of its last row written (null: none yet). */
  tagIndex: number;
  lastMs: number | null;
  problem: string;
}

async function queryRun(target: Target, opts: ExportOptions, scope: CollectionScope, run: Cursor[], to: number, out: Output): Promise<RunRead> {
  const iso = opts.format === 'csv' && opts.timeFormat === 'iso';
  const path = `/svcapi/fast_query?format=csv${iso ? '&time_format=iso' : ''}`;
  const body = JSON.stringify({ start_absolute: run[0].start, end_absolute: to, ...scope, metrics: run.map((c) => ({ name: c.tag })) });
  out.requests++;
  let res: IncomingMessage;
  try {
    res = await openRequest(target, 'POST', path, { body, contentType: 'application/json', signal: opts.signal });
  } catch (err) {
    if (opts.signal?.aborted) throw abortError(opts.signal);
    return { complete: false, tagIndex: 0, lastMs: null, problem: (err as Error).message };
  }
  if (res.statusCode !== 200) {
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    // Busy (a shard's query queue full, a restarting worker): asked again after a pause.
    if (res.statusCode === 429 || res.statusCode === 503) {
      await sleep(Math.min(Number(res.headers['retry-after']) * 1000 || BUSY_PAUSE_MS, 30_000), opts.signal);
      return { complete: false, tagIndex: 0, lastMs: null, problem: `HTTP ${res.statusCode}` };
    }
    throw new Error(`querying ${opts.collection}: ${replyProblem({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) })}`);
  }
  const state = { tagIndex: 0, rawTag: null as string | null, lastTime: null as string | null, header: true };
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let problem = '';
  const onRow = (row: string) => {
    if (state.header) {
      state.header = false;
      return;
    }
    const c1 = row.indexOf(',');
    const c2 = row.lastIndexOf(',');
    const rawTag = row.slice(c1 + 1, c2);
    if (rawTag !== state.rawTag) {
      const tag = rawTag.startsWith('"') ? rawTag.slice(1, -1).replace(/""/g, '"') : rawTag;
      const index = run.findIndex((c, i) => i >= state.tagIndex && c.tag === tag);
      if (index < 0) throw new OutOfOrder(`the service answered rows of tag ${JSON.stringify(tag)}, which was not asked for or came out of order`);
      state.tagIndex = index;
      state.rawTag = rawTag;
      state.lastTime = null;
    }
    state.lastTime = row.slice(0, c1);
    out.row(row, c1, c2, rawTag);
  };
  try {
    for await (const piece of res) {
      const text = rest + decoder.write(piece as Buffer);
      let p = 0;
      for (let e = text.indexOf('\r\n'); e >= 0; e = text.indexOf('\r\n', p)) {
        onRow(text.slice(p, e));
        p = e + 2;
      }
      rest = text.slice(p);
      await out.maybeFlush();
      opts.onProgress?.(out.points, out.series);
    }
  } catch (err) {
    if (opts.signal?.aborted) throw abortError(opts.signal);
    if (err instanceof OutOfOrder) throw err;
    problem = (err as Error).message;
  }
  if (res.complete && problem === '' && rest === '') return { complete: true, tagIndex: run.length, lastMs: null, problem };
  let lastMs: number | null = null;
  if (state.lastTime !== null) {
    const parsed = parseCsvTime(state.lastTime);
    if (typeof parsed === 'string') throw new Error(`the service answered a row whose ${parsed}`);
    lastMs = parsed;
  }
  return { complete: false, tagIndex: state.tagIndex, lastMs, problem: problem || 'the reply ended early' };
}

class OutOfOrder extends Error {}

/** Rows out, in pieces, at the pace `out` takes them. */
class Output {
  points = 0;
  series = 0;
  skipped = 0;
  requests = 0;
  private parts: string[] = [];
  private bytes = 0;
  private measurementOf = { raw: null as string | null, text: '' };
  /** The tag of the last row written: a tag's rows come together, in one batch. */
  private lastRawTag: string | null = null;

  constructor(private readonly opts: ExportOptions) {}

  push(text: string): void {
    this.parts.push(text);
    this.bytes += text.length;
  }

  /** One CSV row of the service (`time,tag,value`, commas at c1 and c2), written as the format asks. */
  row(row: string, c1: number, c2: number, rawTag: string): void {
    const value = row.slice(c2 + 1);
    // Empty (NaN) or an infinity: neither a CSV import nor line protocol can write it back.
    if (value === '' || value.endsWith('Infinity')) {
      this.skipped++;
      return;
    }
    this.points++;
    if (rawTag !== this.lastRawTag) {
      this.series++;
      this.lastRawTag = rawTag;
    }
    if (this.opts.format === 'csv') {
      this.push(`${row}\r\n`);
      return;
    }
    if (this.measurementOf.raw !== rawTag) {
      const tag = rawTag.startsWith('"') ? rawTag.slice(1, -1).replace(/""/g, '"') : rawTag;
      this.measurementOf = { raw: rawTag, text: exportMeasurement(tag) };
    }
    // Milliseconds to nanoseconds by appending digits: exact where a multiplication would round.
    this.push(`${this.measurementOf.text} value=${value} ${row.slice(0, c1)}000000\n`);
  }

  async maybeFlush(): Promise<void> {
    if (this.bytes >= WRITE_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    const text = this.parts.join('');
    this.parts = [];
    this.bytes = 0;
    const out = this.opts.out;
    if (!out.write(text)) {
      await new Promise<void>((resolve, reject) => {
        const done = (err?: Error) => {
          out.off('drain', onDrain);
          out.off('error', onError);
          if (err) reject(err);
          else resolve();
        };
        const onDrain = () => done();
        const onError = (err: Error) => done(err);
        out.on('drain', onDrain);
        out.on('error', onError);
      });
    }
  }
}
