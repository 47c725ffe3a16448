// A client process of bench/live-ws.ts: holds its share of the live-data WebSockets (the `ws`
// package, one subscription each) and records, for every marker point, the time it arrived. The
// marker is a tag (MARKER_TAG) whose value is a sequence number; bench/live-ws.ts records when the
// write that carried each one was acknowledged, and the difference is the delivery latency. Both
// times are read from the machine's monotonic clock (clockMs of fanout-client.ts), the same in
// every process. It runs as its own process so that the client side does not starve the server's
// main thread and its CPU can be told apart.

import { cpuAnswer } from './client-processes.js';
import WebSocket from 'ws';
import { runPool } from './runner.js';

/**
 * Milliseconds of the machine's monotonic clock (CLOCK_MONOTONIC), as fanout-client.ts reads it:
 * the same clock in every process on the machine, never stepped like the wall clock. (Not
 * imported from there: that module answers its own IPC messages.)
 */
export const clockMs = () => Number(process.hrtime.bigint()) / 1e6;

/** The tag whose value is the marker's sequence number. */
export const MARKER_TAG = 'LIVE-SEQ';

export interface PhaseCounts {
  /** Messages of kind `points` (JSON) or binary messages. */
  messages: number;
  bytes: number;
  /** Points of every tag, the markers included. */
  points: number;
}

export type ToClient =
  | {
      op: 'open';
      url: string;
      ca: string;
      token: string;
      /** How many sockets this process opens; socket i subscribes with id `s<first + i>`. */
      sockets: number;
      first: number;
      concurrency: number;
      subscribe: Record<string, unknown>;
      /** Markers are numbered 0 .. maxSeq - 1. */
      maxSeq: number;
    }
  | { op: 'phase'; index: number }
  | { op: 'count' }
  | { op: 'cpu' }
  | { op: 'finish' };

export type FromClient =
  | { op: 'opened'; subscribedMs: number[]; failed: number; failures: string[] }
  | { op: 'count'; markers: number }
  | { op: 'cpu'; seconds: number }
  | {
      op: 'result';
      /** sockets × maxSeq: when marker seq first arrived on socket i (clockMs), NaN when it did not. */
      received: Float64Array;
      /** Markers that arrived a second time on one socket. */
      duplicates: number;
      /** Markers numbered maxSeq or above (never sent). */
      unexpected: number;
      /** Counts per phase index. */
      phases: PhaseCounts[];
      /** Close codes of the sockets the server closed before `finish`, with the phase they closed in. */
      closed: Array<{ code: number; reason: string; phase: number }>;
      /** Error messages of the sockets (first few). */
      errors: string[];
      /** Messages that could not be read (an `error` op from the server, or a marker that did not parse). */
      odd: string[];
    };

const send = (message: FromClient) => process.send!(message);

let sockets: WebSocket[] = [];
let received = new Float64Array(0);
let maxSeq = 0;
let markers = 0;
let duplicates = 0;
let unexpected = 0;
let phase = 0;
const phases: PhaseCounts[] = [{ messages: 0, bytes: 0, points: 0 }];
const closed: Array<{ code: number; reason: string; phase: number }> = [];
const errors: string[] = [];
const odd: string[] = [];
let finishing = false;

const MARKER_JSON = Buffer.from(`"${MARKER_TAG}":[`);
const MARKER_NAME = Buffer.from(MARKER_TAG);
const OPEN = 0x5b; // [
const CLOSE = 0x5d; // ]
const COLON = 0x3a; // :
const COMMA = 0x2c; // ,

function marker(socket: number, seq: number, at: number): void {
  if (!(seq >= 0 && seq < maxSeq && Number.isInteger(seq))) {
    unexpected++;
    return;
  }
  const slot = socket * maxSeq + seq;
  if (Number.isNaN(received[slot])) {
    received[slot] = at;
    markers++;
  } else duplicates++;
}

/** A non-negative JSON number (an integer here) starting at `i`; answers [value, index after it]. */
function readNumber(data: Buffer, i: number): [number, number] {
  const start = i;
  while (i < data.length && data[i] !== COMMA && data[i] !== CLOSE) i++;
  return [Number(data.toString('latin1', start, i)), i];
}

/**
 * `{"op":"points","id":"s1","tags":{"TI-1001":[[ts,v],...],...,"LIVE-SEQ":[[ts,seq]]}}` without
 * JSON.parse (the client shares the cores with the server): points are the `[` not preceded by
 * `:`, and the marker's list is found with indexOf.
 */
function onJson(socket: number, data: Buffer, at: number): void {
  const counts = phases[phase];
  let points = 0;
  for (let i = 1; i < data.length; i++) if (data[i] === OPEN && data[i - 1] !== COLON) points++;
  if (points === 0 && data.indexOf('"op":"points"') < 0) {
    if (odd.length < 5) odd.push(data.subarray(0, 300).toString());
    return;
  }
  counts.messages++;
  counts.bytes += data.length;
  counts.points += points;
  let i = data.indexOf(MARKER_JSON);
  if (i < 0) return;
  i += MARKER_JSON.length;
  while (data[i] === OPEN) {
    const [, afterTs] = readNumber(data, i + 1);
    const [seq, afterSeq] = readNumber(data, afterTs + 1);
    marker(socket, seq, at);
    i = afterSeq + 1; // past the point's ]
    if (data[i] === COMMA) i++;
  }
}

/** u16 id length, id, then format 1: "HSB1", u32 tag count, per tag u16 name length, name, u32 count, count × (u32, u32, f32). */
function onBinary(socket: number, data: Buffer, at: number): void {
  const counts = phases[phase];
  counts.messages++;
  counts.bytes += data.length;
  let p = 2 + data.readUInt16LE(0);
  const tagCount = data.readUInt32LE(p + 4);
  p += 8;
  for (let t = 0; t < tagCount; t++) {
    const nameLength = data.readUInt16LE(p);
    const isMarker = nameLength === MARKER_NAME.length && data.compare(MARKER_NAME, 0, nameLength, p + 2, p + 2 + nameLength) === 0;
    p += 2 + nameLength;
    const count = data.readUInt32LE(p);
    p += 4;
    counts.points += count;
    if (isMarker) for (let k = 0; k < count; k++) marker(socket, data.readFloatLE(p + k * 12 + 8), at);
    p += count * 12;
  }
}

async function open(m: Extract<ToClient, { op: 'open' }>): Promise<void> {
  maxSeq = m.maxSeq;
  received = new Float64Array(m.sockets * m.maxSeq).fill(NaN);
  const subscribedMs: number[] = [];
  const failures: string[] = [];
  sockets = new Array<WebSocket>(m.sockets);
  await runPool(m.concurrency, Array.from({ length: m.sockets }, (_, i) => i).values(), async (index) => {
    const start = performance.now();
    const id = `s${m.first + index}`;
    try {
      await new Promise<void>((resolve, reject) => {
        // No compression (the server offers none), and no UTF-8 check of every text frame: the
        // markers are found in the raw bytes.
        const ws = new WebSocket(m.url, { ca: m.ca, headers: { authorization: `Bearer ${m.token}` }, perMessageDeflate: false, skipUTF8Validation: true });
        sockets[index] = ws;
        let subscribed = false;
        const timer = setTimeout(() => reject(new Error('not subscribed within 30 s')), 30_000);
        ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id, ...m.subscribe })));
        ws.on('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
        ws.on('error', (err) => {
          if (errors.length < 5) errors.push(`${id}: ${err.message}`);
          reject(err);
        });
        ws.on('close', (code, reason) => {
          if (!finishing) closed.push({ code, reason: reason.toString(), phase });
          reject(new Error(`closed before subscribed: ${code} ${reason.toString()}`));
        });
        ws.on('message', (data: Buffer, isBinary) => {
          const at = clockMs();
          if (isBinary) return onBinary(index, data, at);
          if (!subscribed) {
            const text = data.toString();
            if (text.includes('"op":"subscribed"')) {
              subscribed = true;
              clearTimeout(timer);
              subscribedMs.push(performance.now() - start);
              resolve();
              return;
            }
            if (text.includes('"op":"error"')) {
              clearTimeout(timer);
              reject(new Error(`subscribe refused: ${text.slice(0, 300)}`));
              return;
            }
          }
          onJson(index, data, at);
        });
      });
    } catch (err) {
      failures.push(err instanceof Error ? err.message : String(err));
    }
  });
  send({ op: 'opened', subscribedMs, failed: failures.length, failures: failures.slice(0, 5) });
}

// Only as bench/live-ws.ts's child; importing this module for its types and clockMs does nothing.
if (process.send) process.on('message', (message: ToClient) => {
  switch (message.op) {
    case 'open':
      void open(message);
      break;
    case 'phase':
      phase = message.index;
      while (phases.length <= phase) phases.push({ messages: 0, bytes: 0, points: 0 });
      break;
    case 'count':
      send({ op: 'count', markers });
      break;
    case 'cpu':
      send(cpuAnswer());
      break;
    case 'finish':
      finishing = true;
      for (const ws of sockets) ws?.terminate();
      // Disconnect only once the (large) message has left, or it is lost.
      process.send!({ op: 'result', received, duplicates, unexpected, phases, closed, errors, odd } satisfies FromClient, () => process.disconnect());
      break;
  }
});
