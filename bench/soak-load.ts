// The pieces of the soak run (bench/soak.ts, issue 34): what every request it sends is recorded
// in (status and latency per route class per minute), the paced writers of the four write
// paths with their acknowledged points per tag, and the slow and vanishing readers.

import https from 'node:https';
import { Dataset, hsw1, influxLines, tagKeyedJson, type Chunk, type Scope } from './dataset.js';
import { sleep } from './runner.js';
import type { HttpsClient, Reply } from './service.js';

// ---- what every request is recorded in -----------------------------------------------------

export interface ClassFigures {
  /** Latencies of the successful requests, one array per minute of the run. */
  perMinute: number[][];
  /** Answers by status ('network', 'timeout' for requests that got none). */
  statuses: Map<string, number>;
  ok: number;
  /** 5xx answers other than 503, and 503s: when (minute of the run) and what the body said (first few). */
  samples: string[];
}

/** A request that got no answer within this is a hang, recorded as 'timeout'. */
export const REQUEST_TIMEOUT_MS = 60_000;

export class Recorder {
  started = performance.now();
  readonly classes = new Map<string, ClassFigures>();
  /** performance.now() of each injected worker crash, to place the 503s. */
  readonly crashes: number[] = [];
  /** 503s less than this after a crash are the crash's documented answer. */
  static readonly CRASH_WINDOW_MS = 60_000;
  /** 503s by whether they followed a crash, and whether they carried Retry-After. */
  readonly unavailable = { nearCrash: 0, elsewhere: 0, withRetryAfter: 0 };

  /** Starts the figures over from `at` (setup and measurement left out). */
  restart(at: number): void {
    this.started = at;
    this.classes.clear();
    this.unavailable.nearCrash = this.unavailable.elsewhere = this.unavailable.withRetryAfter = 0;
  }

  minute(at = performance.now()): number {
    return Math.floor((at - this.started) / 60_000);
  }

  figures(cls: string): ClassFigures {
    let f = this.classes.get(cls);
    if (!f) this.classes.set(cls, (f = { perMinute: [], statuses: new Map(), ok: 0, samples: [] }));
    return f;
  }

  /** Records one answer; `ok` says whether it is the success the caller wanted. */
  record(cls: string, status: string | number, ms: number, ok: boolean, detail = ''): void {
    const f = this.figures(cls);
    const key = String(status);
    f.statuses.set(key, (f.statuses.get(key) ?? 0) + 1);
    if (ok) {
      f.ok++;
      const m = this.minute();
      while (f.perMinute.length <= m) f.perMinute.push([]);
      f.perMinute[m].push(ms);
    } else if (f.samples.length < 5 && (typeof status !== 'number' || status >= 500 || !ok)) {
      f.samples.push(`min ${this.minute()}: ${key} ${detail.slice(0, 200)}`);
    }
  }

  /** Whether an answer that came at `at` came less than CRASH_WINDOW_MS after a killed worker (the request may have started before it). */
  nearCrash(at = performance.now()): boolean {
    return this.crashes.some((c) => at >= c && at - c < Recorder.CRASH_WINDOW_MS);
  }

  /**
   * A connection cut before the whole answer came: documented for a streamed answer whose shard
   * dies under it (README, Configuration: "else the connection is cut"), so a cut soon after a
   * killed worker is recorded as 'cut after a crash'; any other is 'network'.
   */
  cutStatus(): string {
    return this.nearCrash() ? 'cut after a crash' : 'network';
  }

  /**
   * Sends one request through `send` with a timeout; records it under `cls` and answers the
   * reply, or null when there was none (network error, timeout).
   */
  async timed(cls: string, send: () => Promise<Reply>, isOk: (r: Reply) => boolean = (r) => r.status >= 200 && r.status < 300): Promise<Reply | null> {
    const start = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), REQUEST_TIMEOUT_MS)));
    try {
      const reply = await Promise.race([send(), timeout]);
      if (reply === 'timeout') {
        this.record(cls, 'timeout', performance.now() - start, false);
        return null;
      }
      if (reply.status === 503) {
        if (this.nearCrash()) this.unavailable.nearCrash++;
        else this.unavailable.elsewhere++;
        if (reply.headers['retry-after'] !== undefined) this.unavailable.withRetryAfter++;
      }
      const ok = isOk(reply);
      // A 503 is told apart by whether it says when to come back (WIRE: ingest routes must).
      const status = reply.status === 503 && reply.headers['retry-after'] !== undefined ? '503 Retry-After' : reply.status;
      this.record(cls, status, reply.ms, ok, ok ? '' : reply.body.subarray(0, 200).toString('utf8'));
      return reply;
    } catch (err) {
      this.record(cls, this.cutStatus(), performance.now() - start, false, err instanceof Error ? err.message : String(err));
      return null;
    } finally {
      clearTimeout(timer);
    }
  }
}

// ---- the write paths -----------------------------------------------------------------------

export type PathName = 'json /svcapi/write' | 'hsw1 /svcapi/write_fast' | 'line protocol /ingest/v2/write' | 'line protocol /write';

export const MEASUREMENT = 'soak';

/** One collection a write path writes into, its tags and where its timestamps are. */
export interface Target {
  scope: Scope;
  /** The data set's tag names; `stored[i]` is how tag i is stored (line protocol: `soak,tag=<name>.value`). */
  tags: string[];
  stored: string[];
  cursorMs: number;
  /** Points acknowledged per stored tag name. */
  acked: Map<string, number>;
  /** Earliest and latest timestamp written (acknowledged or not). */
  firstMs: number;
  lastMs: number;
}

export interface WritePath {
  name: PathName;
  targets: Target[];
  route: string;
  contentType: string;
  encode(target: Target, chunk: Chunk): string | Uint8Array;
  /** Whether a reply acknowledges the request's points. */
  acknowledges(reply: Reply, points: number): boolean;
  /** Values of the noisy data set, one block after the other (timestamps replaced). */
  values: Generator<Chunk>;
  rows: number;
  points: number;
  requests: number;
  /** Requests given up after their retries. */
  abandoned: number;
}

const jsonAck = (reply: Reply, points: number): boolean => {
  if (reply.status !== 200) return false;
  try {
    const answer = JSON.parse(reply.body.toString('utf8')) as { success?: boolean; points?: number };
    return answer.success === true && answer.points === points;
  } catch {
    return false;
  }
};

export function lineTagName(tag: string): string {
  return `${MEASUREMENT},tag=${tag}.value`;
}

/** A write path over `collections` collections of `tags` tags each (one request = one collection × every tag × `rows`). */
export function writePath(name: PathName, scopes: Scope[], tags: number, rows: number, clientId = ''): WritePath {
  const dataset = new Dataset({ tags, points: Number.MAX_SAFE_INTEGER, tagsPerRequest: tags, pointsPerRequest: rows, dataset: 'noisy', seed: name.length * 7 });
  const line = name.startsWith('line protocol');
  const targets = scopes.map((scope) => ({
    scope,
    tags: dataset.tagNames,
    stored: line ? dataset.tagNames.map(lineTagName) : dataset.tagNames,
    cursorMs: 0,
    acked: new Map<string, number>(),
    firstMs: Infinity,
    lastMs: -Infinity,
  }));
  const common = { name, targets, values: dataset.chunks(), rows, points: 0, requests: 0, abandoned: 0 };
  switch (name) {
    case 'json /svcapi/write':
      return { ...common, route: '/svcapi/write', contentType: 'application/json', encode: (t, c) => tagKeyedJson(t.scope, c), acknowledges: jsonAck };
    case 'hsw1 /svcapi/write_fast':
      return { ...common, route: '/svcapi/write_fast', contentType: 'application/octet-stream', encode: (t, c) => hsw1(t.scope, c), acknowledges: jsonAck };
    case 'line protocol /ingest/v2/write':
    case 'line protocol /write':
      return {
        ...common,
        route: `${name === 'line protocol /write' ? '/write' : '/ingest/v2/write'}?db=${encodeURIComponent(clientId)}&precision=ms`,
        contentType: 'text/plain',
        encode: (t, c) => influxLines(MEASUREMENT, t.scope, c),
        acknowledges: (reply) => reply.status === 204,
      };
  }
}

/** The next request of a target: `rows` timestamps 1 ms apart ending now, or right after the last ones. */
function nextChunk(path: WritePath, target: Target, rows: number): Chunk {
  const values = path.values.next().value as Chunk;
  const first = Math.max(target.cursorMs + 1, Date.now() - rows + 1);
  const timestamps = new Float64Array(rows);
  for (let i = 0; i < rows; i++) timestamps[i] = first + i;
  target.cursorMs = first + rows - 1;
  target.firstMs = Math.min(target.firstMs, first);
  target.lastMs = target.cursorMs;
  const columns = values.columns.map((c) => ({ name: c.name, values: c.values.subarray(0, rows) }));
  return { timestamps, columns, points: rows * columns.length };
}

/**
 * Writes one request of `target` (`rows` rows); 503 and answers lost to a network error are
 * retried with the same body (a write stored twice keeps one point per timestamp). Counts the
 * points as acknowledged only on the path's success answer.
 */
export async function writeOnce(rec: Recorder, client: HttpsClient, path: WritePath, target: Target, rows = path.rows): Promise<boolean> {
  const chunk = nextChunk(path, target, rows);
  const body = path.encode(target, chunk);
  for (let attempt = 0; attempt < 50; attempt++) {
    const reply = await rec.timed(`write: ${path.name}`, () => client.request('POST', path.route, body, { 'content-type': path.contentType }), (r) => path.acknowledges(r, chunk.points));
    path.requests++;
    if (reply && path.acknowledges(reply, chunk.points)) {
      for (const { name } of chunk.columns) {
        const stored = target.stored[target.tags.indexOf(name)];
        target.acked.set(stored, (target.acked.get(stored) ?? 0) + rows);
      }
      path.points += chunk.points;
      return true;
    }
    // Anything but backpressure, a restarting shard or a lost answer is a wrong answer: not retried.
    if (reply && reply.status !== 503) break;
    await sleep(Math.min(1000, 20 * (attempt + 1)));
  }
  path.abandoned++;
  return false;
}

/**
 * Writes `path` until `until()` is true: `connections` loops, each taking the path's targets in
 * turn; paced to `pointsPerSecond` (0: flat out). Falling more than 5 s behind the schedule
 * restarts it, so a stall is not followed by a burst.
 */
export async function runWriter(rec: Recorder, client: HttpsClient, path: WritePath, o: { connections: number; pointsPerSecond: number; until: () => boolean }): Promise<void> {
  const perRequest = path.rows * path.targets[0].tags.length;
  const intervalMs = o.pointsPerSecond > 0 ? (1000 * perRequest) / o.pointsPerSecond : 0;
  let next = performance.now();
  let turn = 0;
  await Promise.all(
    Array.from({ length: o.connections }, async () => {
      while (!o.until()) {
        if (intervalMs > 0) {
          const now = performance.now();
          if (now - next > 5000) next = now;
          const at = next;
          next += intervalMs;
          if (at > now) await sleep(at - now);
          if (o.until()) return;
        }
        await writeOnce(rec, client, path, path.targets[turn++ % path.targets.length]);
      }
    }),
  );
}

// ---- slow and vanishing readers ------------------------------------------------------------

/**
 * A streamed query read at a trickle (one chunk every `pauseMs`) for at most `seconds`, then
 * walked away from; or (`vanish`) dropped after its first chunk. Answers the bytes read and the
 * status; null when the connection failed or was cut, 'timeout' when the answer stalled.
 */
export type OddRead = { status: number; bytes: number; ended: boolean } | null | 'timeout';

export function oddReader(target: { port: number; ca: string; token: string }, urlPath: string, o: { vanish: boolean; pauseMs: number; seconds: number }): Promise<OddRead> {
  return new Promise((resolve) => {
    let bytes = 0;
    let done = false;
    const finish = (value: OddRead) => {
      if (done) return;
      done = true;
      clearTimeout(giveUp);
      req.destroy();
      resolve(value);
    };
    const giveUp = setTimeout(() => finish('timeout'), o.seconds * 1000 + REQUEST_TIMEOUT_MS);
    const req = https.request({ host: '127.0.0.1', servername: 'localhost', port: target.port, path: urlPath, ca: target.ca, agent: false, headers: { authorization: `Bearer ${target.token}` } }, (res) => {
      const status = res.statusCode ?? 0;
      res.on('error', () => {}); // destroyed on purpose
      if (status !== 200) {
        res.resume();
        res.on('end', () => finish({ status, bytes, ended: true }));
        return;
      }
      const stopAt = performance.now() + o.seconds * 1000;
      res.on('end', () => finish({ status, bytes, ended: true }));
      // The server cut the answer short (not us: finish() has not run).
      res.on('close', () => finish(res.complete ? { status, bytes, ended: true } : null));
      const readSome = () => {
        if (done) return;
        const chunk = res.read() as Buffer | null;
        if (chunk) bytes += chunk.length;
        if (o.vanish && bytes > 0) return finish({ status, bytes, ended: false });
        if (performance.now() > stopAt) return finish({ status, bytes, ended: false });
        setTimeout(readSome, chunk ? o.pauseMs : 50);
      };
      res.once('readable', readSome);
    });
    req.on('error', () => finish(null));
    req.end();
  });
}
