import { once } from 'node:events';
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** Names the requests found in a client->server byte stream; one instance per connection. */
export type RequestParser = () => (chunk: Buffer) => string[];

export interface WireCounts {
  bytesToServer: number;
  bytesFromServer: number;
  /** Requests by name (e.g. "PUT /v1/session/renew", "findAndModify bench_x_pings"). */
  readonly requests: Map<string, number>;
}

/**
 * A loopback TCP relay that counts what a client sends and receives: the bench's view of a
 * provider's traffic without reaching into the adapter (whose insides are being rewritten).
 */
export class WireTap {
  private readonly sockets = new Set<Socket>();
  readonly counts: WireCounts = { bytesToServer: 0, bytesFromServer: 0, requests: new Map() };

  private constructor(private readonly server: Server) {}

  static async start(upstream: { host: string; port: number }, parser?: RequestParser): Promise<WireTap> {
    const tap: WireTap = new WireTap(createServer((client) => tap.relay(client, upstream, parser?.())));
    tap.server.listen(0, '127.0.0.1');
    await once(tap.server, 'listening');
    return tap;
  }

  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** `url` with its host replaced by this relay (and, for MongoDB, told not to discover other members). */
  through(url: string): string {
    const parsed = new URL(url);
    parsed.host = `127.0.0.1:${this.port}`;
    if (parsed.protocol.startsWith('mongodb')) parsed.searchParams.set('directConnection', 'true');
    return parsed.href;
  }

  /** A copy of the counts so far, to subtract from later ones. */
  snapshot(): WireCounts {
    return { ...this.counts, requests: new Map(this.counts.requests) };
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  private relay(client: Socket, upstream: { host: string; port: number }, parse?: (chunk: Buffer) => string[]): void {
    const server = createConnection(upstream);
    for (const socket of [client, server]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        server.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      this.counts.bytesToServer += chunk.length;
      for (const name of parse?.(chunk) ?? []) this.counts.requests.set(name, (this.counts.requests.get(name) ?? 0) + 1);
    });
    server.on('data', (chunk: Buffer) => (this.counts.bytesFromServer += chunk.length));
    client.pipe(server);
    server.pipe(client);
  }
}

/** Differences between two snapshots of one tap. */
export function wireDelta(before: WireCounts, after: WireCounts): WireCounts {
  const requests = new Map<string, number>();
  for (const [name, n] of after.requests)
    if (n - (before.requests.get(name) ?? 0) > 0) requests.set(name, n - (before.requests.get(name) ?? 0));
  return {
    bytesToServer: after.bytesToServer - before.bytesToServer,
    bytesFromServer: after.bytesFromServer - before.bytesFromServer,
    requests,
  };
}
