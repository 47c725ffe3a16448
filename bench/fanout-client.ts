// A client process of bench/notification-fanout.ts: holds its share of the notification
// streams and records, for every `notification` event, the delivery latency: the time the event
// is parsed here minus the send time the poster put in its payload. Both are read from the same
// machine clock (the monotonic clock, comparable across processes). It runs as its own process so that its CPU can be told apart from the server's and
// the poster's.

import { cpuAnswer } from './client-processes.js';
import { openStream, type OpenedStream, type SseEvent } from './sse.js';
import { runPool } from './runner.js';

export type ToClient =
  | { op: 'open'; port: number; ca: string; tokens: string[]; concurrency: number; notifications: number; firstSteadySeq: number }
  | { op: 'count' }
  | { op: 'cpu' }
  | { op: 'finish' };

export type FromClient =
  | { op: 'opened'; connectMs: number[]; open: Uint8Array; failed: number; failures: string[] }
  | { op: 'count'; delivered: number }
  | { op: 'cpu'; seconds: number }
  | {
      op: 'result';
      /** One per notification event received, in ms. */
      latencies: Float64Array;
      /** The same for notifications from `firstSteadySeq` on (after the first second: JIT, first grants). */
      steadyLatencies: Float64Array;
      /** Largest latency of each notification (by its `seq`) over this client's streams; NaN when none arrived. */
      worstBySeq: Float64Array;
      /** Notification events received, per stream in the order of `tokens`. */
      perStream: Uint32Array;
      /** Events whose id was not above the previous one on their stream (duplicates or reordering). */
      outOfOrder: number;
      /** Events whose payload held no send time. */
      malformed: number;
      /** Streams the server ended (or whose connection dropped) before `finish`. */
      cut: number;
    };

/** The send time the poster writes into the notification's payload, followed by its `seq` (see notification-fanout.ts). */
export const SENT_AT_FIELD = 'sentAtMs';
const SENT_AT = new RegExp(`"${SENT_AT_FIELD}":(-?[0-9.eE+]+),"seq":([0-9]+)`);

/**
 * Milliseconds of the machine's monotonic clock (CLOCK_MONOTONIC, nanosecond resolution): the same
 * clock in every process, and unlike the wall clock never stepped between the poster's reading and
 * a client's.
 */
export const clockMs = () => Number(process.hrtime.bigint()) / 1e6;

/** A Float64Array that grows, so millions of samples cost no per-sample allocation. */
class Samples {
  private buffer = new Float64Array(1 << 16);
  length = 0;

  push(value: number): void {
    if (this.length === this.buffer.length) {
      const bigger = new Float64Array(this.buffer.length * 2);
      bigger.set(this.buffer);
      this.buffer = bigger;
    }
    this.buffer[this.length++] = value;
  }

  take(): Float64Array {
    return this.buffer.slice(0, this.length);
  }
}

const latencies = new Samples();
const steadyLatencies = new Samples();
let firstSteadySeq = 0;
let perStream = new Uint32Array(0);
let lastId = new Float64Array(0);
let worstBySeq = new Float64Array(0);
let delivered = 0;
let outOfOrder = 0;
let malformed = 0;
let cut = 0;
let finishing = false;
const streams: OpenedStream[] = [];

const send = (message: FromClient) => process.send!(message);

function onNotification(index: number, e: SseEvent): void {
  const receivedAt = clockMs();
  delivered++;
  perStream[index]++;
  const id = Number(e.id);
  if (!(id > lastId[index])) outOfOrder++;
  lastId[index] = id;
  // A regular expression instead of JSON.parse: the client's CPU is shared with the server.
  const sent = SENT_AT.exec(e.data);
  if (sent) {
    const latency = receivedAt - Number(sent[1]);
    latencies.push(latency);
    const seq = Number(sent[2]);
    if (seq >= firstSteadySeq) steadyLatencies.push(latency);
    if (!(worstBySeq[seq] >= latency)) worstBySeq[seq] = latency;
  } else {
    malformed++;
  }
}

async function open(port: number, ca: string, tokens: string[], concurrency: number, notifications: number): Promise<void> {
  perStream = new Uint32Array(tokens.length);
  worstBySeq = new Float64Array(notifications).fill(NaN);
  lastId = new Float64Array(tokens.length).fill(-Infinity);
  const connectMs: number[] = [];
  const failures: string[] = [];
  /** 1 for each stream that reached replay-complete. */
  const isOpen = new Uint8Array(tokens.length);
  await runPool(concurrency, tokens.entries(), async ([index, token]) => {
    const start = performance.now();
    let replayed!: () => void;
    const replayComplete = new Promise<void>((resolve) => (replayed = resolve));
    try {
      const stream = await openStream({ port, ca }, token, {}, (e) => {
        if (e.event === 'notification') onNotification(index, e);
        else if (e.event === 'replay-complete') replayed();
      });
      if (stream.status !== 200) {
        failures.push(`HTTP ${stream.status} ${stream.contentType}: ${stream.body.slice(0, 200)}`);
        return;
      }
      streams.push(stream);
      void stream.ended.then(() => {
        if (!finishing) cut++;
      });
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(resolve, 30_000, 'timeout').unref());
      if ((await Promise.race([replayComplete, stream.ended.then(() => 'ended' as const), timeout])) === undefined) {
        connectMs.push(performance.now() - start);
        isOpen[index] = 1;
      }
      else failures.push('no replay-complete within 30 s (or the stream ended first)');
    } catch (err) {
      failures.push(err instanceof Error ? err.message : String(err));
    }
  });
  send({ op: 'opened', connectMs, open: isOpen, failed: failures.length, failures: failures.slice(0, 5) });
}

process.on('message', (message: ToClient) => {
  switch (message.op) {
    case 'open':
      firstSteadySeq = message.firstSteadySeq;
      void open(message.port, message.ca, message.tokens, message.concurrency, message.notifications);
      break;
    case 'count':
      send({ op: 'count', delivered });
      break;
    case 'cpu':
      send(cpuAnswer());
      break;
    case 'finish':
      finishing = true;
      for (const stream of streams) stream.close();
      // Disconnect only once the (large) message has left, or it is lost.
      process.send!({ op: 'result', latencies: latencies.take(), steadyLatencies: steadyLatencies.take(), worstBySeq, perStream, outOfOrder, malformed, cut } satisfies FromClient, () => process.disconnect());
      break;
  }
});
