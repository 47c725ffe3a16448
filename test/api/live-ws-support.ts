// A live data client for the API tests (the `ws` package, trusting the test service's CA): every
// message it receives kept in order, the close code and reason, and waiting for a message.

import WebSocket from 'ws';
import { waitFor } from '../support/wait-for.js';
import type { TestService } from './harness.js';

export class Client {
  readonly messages: Array<Record<string, any>> = [];
  readonly binary: Buffer[] = [];
  closed: { code: number; reason: string } | null = null;
  readonly ws: WebSocket;
  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.binary.push(data as Buffer);
      else this.messages.push(JSON.parse(String(data)));
    });
    ws.on('close', (code, reason) => (this.closed = { code, reason: String(reason) }));
  }

  static open(svc: TestService, token: string, via: 'header' | 'query' = 'header', opts: WebSocket.ClientOptions = {}): Promise<Client> {
    const url = `wss://localhost:${svc.port}/svcapi/ws${via === 'query' ? `?access_token=${encodeURIComponent(token)}` : ''}`;
    const ws = new WebSocket(url, { ca: svc.ca, headers: via === 'header' ? { authorization: `Bearer ${token}` } : {}, ...opts });
    const client = new Client(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(client));
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode })));
      ws.once('error', reject);
    });
  }

  send(message: unknown): void {
    this.ws.send(JSON.stringify(message));
  }

  async next(what: string, match: (m: Record<string, any>) => boolean): Promise<Record<string, any>> {
    let found: Record<string, any> | undefined;
    await waitFor(() => (found = this.messages.find(match)) !== undefined, what, { timeoutMs: 15_000 });
    return found!;
  }

  points(id: string): Record<string, Array<[number, number]>> {
    const out: Record<string, Array<[number, number]>> = {};
    for (const m of this.messages) if (m.op === 'points' && m.id === id) for (const [tag, pts] of Object.entries(m.tags as Record<string, Array<[number, number]>>)) (out[tag] ??= []).push(...pts);
    return out;
  }
}
