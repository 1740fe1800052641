import { createConnection, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A loopback TCP proxy to one upstream that can be cut (every connection destroyed, new ones reset at
 * once: an unreachable agent) and restored (forwarding again, same port).
 */
export interface SwitchableProxy {
  readonly url: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startSwitchableProxy(upstreamUrl: string): Promise<SwitchableProxy> {
  const upstream = new URL(upstreamUrl);
  if (upstream.hostname !== '127.0.0.1') throw new Error(`loopback upstreams only, got ${upstream.hostname}`);
  const sockets = new Set<Socket>();
  let cut = false;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    if (cut) return void client.resetAndDestroy();
    const server = createConnection({ host: '127.0.0.1', port: Number(upstream.port) });
    track(client);
    track(server);
    client.pipe(server);
    server.pipe(client);
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
