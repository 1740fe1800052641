import { createServer, type Socket } from 'node:net';
import { type ServerAddress, listenOnLoopback } from './address.js';

/** A loopback server that accepts connections, reads whatever comes and never answers: a hung host. */
export interface HungListener {
  readonly address: ServerAddress;
  /** Connections accepted so far. */
  readonly connectionsAccepted: number;
  /** Connections the clients have not closed yet. */
  readonly openConnections: number;
  close(): Promise<void>;
}

export async function hungListener(): Promise<HungListener> {
  const server = createServer({ allowHalfOpen: true });
  const open = new Set<Socket>();
  let accepted = 0;
  server.on('connection', (socket) => {
    accepted++;
    open.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => open.delete(socket));
    // A half-close from the client is its goodbye: finish the close so the socket is really gone.
    socket.on('end', () => socket.end());
    socket.resume();
  });
  const address = await listenOnLoopback(server);
  return {
    address,
    get connectionsAccepted() {
      return accepted;
    },
    get openConnections() {
      return open.size;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
