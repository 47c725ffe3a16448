// A plain HTTP server on loopback for the upstream stand-ins of the proxy tests
// (qdrant-simulator.ts, adk-upstream.ts): each request is handed over with its whole body, and an
// answer can be held back (an upstream that hangs) until the server stops.

import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type BodyHandler = (req: http.IncomingMessage, body: Buffer, res: http.ServerResponse) => void;

export class LoopbackServer {
  private readonly held = new Set<http.ServerResponse>();

  private constructor(private readonly server: http.Server) {}

  static async start(handler: BodyHandler): Promise<LoopbackServer> {
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => handler(req, Buffer.concat(chunks), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new LoopbackServer(server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Leaves `res` unanswered until `stop`. */
  hold(res: http.ServerResponse): void {
    this.held.add(res);
    res.on('close', () => this.held.delete(res));
  }

  async stop(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
