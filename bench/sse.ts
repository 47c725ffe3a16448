// N concurrent clients on the notification stream (Server-Sent Events):
// time to connect (until `replay-complete`) and the delivery latency of
// notifications an admin posts while they listen.

import https from 'node:https';
import tls from 'node:tls';
import { describeReply, percentiles, sleep } from './runner.js';
import type { HttpsClient } from './service.js';
import { parseSseBlock } from '../test/support/sse-block.js';

/** What the stream needs of a running service. */
export interface StreamTarget {
  port: number;
  ca: string;
  token: string;
  client(sockets: number): HttpsClient;
}

export interface StreamFigures {
  connected: number;
  connect: ReturnType<typeof percentiles>;
  posted: number;
  post: ReturnType<typeof percentiles>;
  delivered: number;
  delivery: ReturnType<typeof percentiles>;
}

export interface SseEvent {
  event: string;
  id: string;
  data: string;
}

/**
 * Incremental Server-Sent-Events parser: feed it the stream's text as it arrives and it calls
 * `onEvent` once per complete event (comments, such as keepalives, are skipped).
 */
export class SseParser {
  private pending = '';

  constructor(private readonly onEvent: (e: SseEvent) => void) {}

  feed(text: string): void {
    this.pending += text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
    let end: number;
    while ((end = this.pending.indexOf('\n\n')) >= 0) {
      const block = this.pending.slice(0, end);
      this.pending = this.pending.slice(end + 2);
      const fields = parseSseBlock(block.split('\n')); // keep-alive comments are skipped there
      const e: SseEvent = { event: fields.event ?? 'message', id: fields.id ?? '', data: fields.data ?? '' };
      if (e.data || e.event !== 'message') this.onEvent(e);
    }
  }
}

/** One TLS context per CA: building one per connection (parsing the CA each time) would dominate opening thousands of streams. */
const secureContexts = new Map<string, tls.SecureContext>();
function secureContextFor(ca: string): tls.SecureContext {
  let context = secureContexts.get(ca);
  if (!context) secureContexts.set(ca, (context = tls.createSecureContext({ ca })));
  return context;
}

export interface OpenedStream {
  status: number;
  contentType: string;
  /** The body when the answer was not an event stream. */
  body: string;
  close(): void;
  /** Resolves when the server ends the stream or the connection drops (not on close()). */
  ended: Promise<void>;
}

/**
 * One stream on its own connection, the token in `?access_token=` (as a browser's EventSource
 * sends it); calls `onEvent` per complete event.
 */
export function openStream(
  target: { port: number; ca: string },
  token: string,
  headers: Record<string, string>,
  onEvent: (e: SseEvent) => void,
): Promise<OpenedStream> {
  return new Promise((resolve, reject) => {
    let closing = false;
    let ended!: () => void;
    const endedPromise = new Promise<void>((r) => (ended = r));
    const req = https.request(
      {
        host: '127.0.0.1',
        servername: 'localhost',
        port: target.port,
        path: `/svcapi/notifications/stream?access_token=${encodeURIComponent(token)}`,
        headers: { accept: 'text/event-stream', ...headers },
        ...({ secureContext: secureContextFor(target.ca) } satisfies tls.ConnectionOptions), // passed on to tls.connect
        agent: false, // one connection per client, as browsers would hold them
      },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        const close = () => {
          closing = true;
          req.destroy();
        };
        if (res.statusCode !== 200 || !contentType.startsWith('text/event-stream')) {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType, close, body, ended: endedPromise }));
          return;
        }
        resolve({ status: 200, contentType, close, body: '', ended: endedPromise });
        const parser = new SseParser(onEvent);
        res.setEncoding('utf8');
        res.on('data', (text: string) => parser.feed(text));
        res.on('error', () => {});
        res.on('close', () => {
          if (!closing) ended();
        });
      },
    );
    req.on('error', (err) => {
      if (!closing) reject(err);
    });
    req.end();
  });
}

export async function streamLoad(svc: StreamTarget, clients: number, notifications: number): Promise<StreamFigures | { absent: string }> {
  // The probe also sends the header, so a route that is not there (or is
  // matched by the entity route /notifications/{id}) is told apart from one
  // that refuses the query-string token.
  const probe = await openStream(svc, svc.token, { authorization: `Bearer ${svc.token}` }, () => {});
  probe.close();
  if (probe.status !== 200) return { absent: `answered ${probe.status} ${probe.contentType}: ${probe.body.slice(0, 200)}` };

  // Each client's receive times by notification title.
  const received: Array<Map<string, number>> = [];
  const connectTimes: number[] = [];
  const streams = await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const got = new Map<string, number>();
      received[i] = got;
      const start = performance.now();
      let ready!: () => void;
      const replayed = new Promise<void>((resolve) => (ready = resolve));
      const stream = await openStream(svc, svc.token, {}, (e) => {
        if (e.event === 'replay-complete') {
          connectTimes.push(performance.now() - start);
          ready();
        } else if (e.event === 'notification') {
          const title = (JSON.parse(e.data) as { title?: string }).title;
          if (title && !got.has(title)) got.set(title, performance.now());
        }
      });
      if (stream.status !== 200) throw new Error(`stream with ?access_token answered ${stream.status}: ${stream.body.slice(0, 200)}`);
      await Promise.race([replayed, sleep(10_000)]);
      return stream;
    }),
  );
  const post = svc.client(1);
  const sentAt = new Map<string, number>();
  const postTimes: number[] = [];
  const stamp = Date.now();
  for (let k = 0; k < notifications; k++) {
    const title = `bench ${stamp} #${k}`;
    sentAt.set(title, performance.now());
    const reply = await post.postJson('/svcapi/notifications', { severity: 'info', source: 'admin', title, body: 'load test notification' });
    if (reply.status !== 201 && reply.status !== 200) throw describeReply('POST /svcapi/notifications', reply);
    postTimes.push(reply.ms);
    await sleep(100);
  }
  // Give the last one time to arrive everywhere.
  const deadline = performance.now() + 5000;
  while (performance.now() < deadline && received.some((m) => m.size < notifications)) await sleep(50);
  for (const s of streams) s.close();
  post.close();

  const delivery: number[] = [];
  for (const got of received) for (const [title, at] of got) if (sentAt.has(title)) delivery.push(at - sentAt.get(title)!);
  return {
    connected: connectTimes.length,
    connect: percentiles(connectTimes),
    posted: notifications,
    post: percentiles(postTimes),
    delivered: delivery.length,
    delivery: percentiles(delivery),
  };
}

