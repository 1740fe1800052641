import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';

/** A loopback port that accepts connections, reads requests and never answers: a hung service, without leaving loopback. */
export class SilentListener {
  readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server) {
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      // Reads and discards what it is sent, like a process that takes requests and never replies.
      socket.resume();
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    });
  }

  static async start(): Promise<SilentListener> {
    const listener = new SilentListener(createServer());
    await new Promise<void>((resolve, reject) => {
      listener.server.once('error', reject);
      listener.server.listen(0, '127.0.0.1', resolve);
    });
    return listener;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
