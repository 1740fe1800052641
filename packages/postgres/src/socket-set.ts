import { Socket } from 'node:net';

/**
 * The sockets of the connections this provider opened itself (its own pool, its LISTEN client),
 * handed to pg through its `stream` option, so that close() can cut them all when it runs out of
 * time: pg's own end() waits for the server, which may never answer.
 */
export class SocketSet {
  private readonly sockets = new Set<Socket>();

  /** For pg's `stream` option: a new socket, tracked until it closes. */
  readonly create = (): Socket => {
    const socket = new Socket();
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    return socket;
  };

  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  get size(): number {
    return this.sockets.size;
  }
}
