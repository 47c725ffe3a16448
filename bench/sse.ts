// N concurrent clients on the notification stream (Server-Sent Events):
// time to connect (until `replay-complete`) and the delivery latency of
// notifications an admin posts while they listen.

import https from 'node:https';
import { describeReply, percentiles, sleep } from './runner.js';
import type { HttpsClient } from './service.js';

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

interface SseEvent {
  event: string;
  id: string;
  data: string;
}

/** One stream on its own connection; calls `onEvent` per complete event. */
function openStream(svc: StreamTarget, headers: Record<string, string>, onEvent: (e: SseEvent) => void): Promise<{ status: number; contentType: string; close(): void; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: '127.0.0.1',
        servername: 'localhost',
        port: svc.port,
        path: `/svcapi/notifications/stream?access_token=${encodeURIComponent(svc.token)}`,
        headers: { accept: 'text/event-stream', ...headers },
        ca: svc.ca,
        agent: false, // one connection per client, as browsers would hold them
      },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        if (res.statusCode !== 200 || !contentType.startsWith('text/event-stream')) {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType, close: () => req.destroy(), body }));
          return;
        }
        resolve({ status: 200, contentType, close: () => req.destroy(), body: '' });
        let pending = '';
        res.on('data', (chunk: Buffer) => {
          pending += chunk.toString('utf8').replace(/\r\n?/g, '\n');
          let end: number;
          while ((end = pending.indexOf('\n\n')) >= 0) {
            const block = pending.slice(0, end);
            pending = pending.slice(end + 2);
            const e: SseEvent = { event: 'message', id: '', data: '' };
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue; // keep-alive comment
              const colon = line.indexOf(':');
              const field = colon < 0 ? line : line.slice(0, colon);
              const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
              if (field === 'event') e.event = value;
              else if (field === 'id') e.id = value;
              else if (field === 'data') e.data += (e.data ? '\n' : '') + value;
            }
            if (e.data || e.event !== 'message') onEvent(e);
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export async function streamLoad(svc: StreamTarget, clients: number, notifications: number): Promise<StreamFigures | { absent: string }> {
  // The probe also sends the header, so a route that is not there (or is
  // matched by the entity route /notifications/{id}) is told apart from one
  // that refuses the query-string token.
  const probe = await openStream(svc, { authorization: `Bearer ${svc.token}` }, () => {});
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
      const stream = await openStream(svc, {}, (e) => {
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

