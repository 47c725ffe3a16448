// A TCP relay on loopback for network-loss tests: `cut()` breaks every relayed connection and
// refuses new ones (as a pulled cable or a firewall would, seen from the client), `restore()`
// relays again. The server behind it keeps running, so its history covers the outage.

import net from 'node:net';

export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private cutOff = false;
  private frozen = false;

  private constructor(private readonly server: net.Server, readonly targetPort: number) {}

  static async start(targetPort: number, listenPort = 0): Promise<TcpProxy> {
    const server = net.createServer();
    const proxy = new TcpProxy(server, targetPort);
    server.on('connection', (client) => proxy.relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(listenPort, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  cut(): void {
    this.cutOff = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  restore(): void {
    this.cutOff = false;
    this.frozen = false;
  }

  /** Relayed connections stay open but carry nothing more (a black hole: no FIN, no RST). */
  freeze(): void {
    this.frozen = true;
    for (const s of this.sockets) s.pause();
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private relay(client: net.Socket): void {
    if (this.cutOff || this.frozen) {
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    // Written by hand rather than piped, so a frozen relay drops what is still buffered.
    client.on('data', (chunk: Buffer) => {
      if (!this.frozen) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!this.frozen) client.write(chunk);
    });
  }
}
