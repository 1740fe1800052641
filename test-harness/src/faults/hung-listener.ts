import { createServer, type Socket } from 'node:net';
import { listenOnLoopback, type ServerAddress } from './address.js';

/** A loopback server that accepts connections, reads whatever comes and never answers: a hung host. */
export interface HungListener {
  readonly address: ServerAddress;
  /** Connections accepted so far. */
  readonly connectionsAccepted: number;
  /** Connections the clients have not fully closed yet (a half-close waiting for the server counts as open). */
  readonly openConnections: number;
  close(): Promise<void>;
}

const PROBE_EVERY_MS = 50;

export async function hungListener(): Promise<HungListener> {
  const server = createServer({ allowHalfOpen: true });
  const open = new Set<Socket>();
  let accepted = 0;
  server.on('connection', (socket) => {
    accepted++;
    open.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      open.delete(socket);
      clearInterval(probe);
    });
    // A hung server never closes its side. Once the client said goodbye (FIN), probe it now and then:
    // a client that really closed its socket answers with a reset; one that only half-closed it and
    // is still waiting for the server keeps the connection (and its handle) open, and is counted.
    let probe: NodeJS.Timeout | undefined;
    socket.on('end', () => {
      probe = setInterval(() => socket.write('\0'), PROBE_EVERY_MS);
    });
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
