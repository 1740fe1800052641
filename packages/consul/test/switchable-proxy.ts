import { type AddressInfo, createConnection, createServer, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to one upstream that can be cut (every connection reset, new ones reset at
 * once: an unreachable agent), hung (connections stay open, nothing is passed on either way: a
 * stalled agent) and restored (forwarding again on new connections, same port).
 */
export interface SwitchableProxy {
  readonly url: string;
  /** Client-side connections not closed yet. */
  readonly openConnections: number;
  cut(): void;
  hang(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startSwitchableProxy(upstreamUrl: string): Promise<SwitchableProxy> {
  const upstream = new URL(upstreamUrl);
  if (upstream.hostname !== '127.0.0.1') throw new Error(`loopback upstreams only, got ${upstream.hostname}`);
  const clients = new Map<Socket, Socket | undefined>();
  let mode: 'forward' | 'cut' | 'hang' = 'forward';
  const swallow = (socket: Socket): void => {
    socket.unpipe();
    // unpipe() leaves the stream paused: without resume() its 'end' (the client's close) never shows.
    socket.on('data', () => undefined);
    socket.resume();
    // A client's goodbye (FIN) is answered, so its socket really closes.
    socket.on('end', () => socket.end());
  };
  const server = createServer({ allowHalfOpen: true }, (client) => {
    if (mode === 'cut') return void client.resetAndDestroy();
    client.on('error', () => client.destroy());
    client.on('close', () => {
      clients.get(client)?.destroy();
      clients.delete(client);
    });
    if (mode === 'hang') {
      clients.set(client, undefined);
      return swallow(client);
    }
    const agent = createConnection({ host: '127.0.0.1', port: Number(upstream.port) });
    clients.set(client, agent);
    agent.on('error', () => agent.destroy());
    agent.on('close', () => mode === 'forward' && client.destroy());
    client.pipe(agent);
    agent.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get openConnections() {
      return clients.size;
    },
    cut() {
      mode = 'cut';
      for (const [client, agent] of clients) {
        client.resetAndDestroy();
        agent?.destroy();
      }
    },
    hang() {
      mode = 'hang';
      for (const [client, agent] of clients) {
        agent?.unpipe();
        agent?.destroy();
        swallow(client);
      }
    },
    restore() {
      mode = 'forward';
    },
    async close() {
      for (const [client, agent] of clients) {
        client.destroy();
        agent?.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
