import { type AddressInfo, connect, createServer, type Server, type Socket } from 'node:net';

/** Decides whether one client->server MongoDB wire message is the one to hold back. */
export type MessageMatcher = (message: Buffer) => boolean;

interface Hold {
  readonly matches: MessageMatcher;
  readonly delayMs: number;
  readonly held: () => void;
  readonly delivered: () => void;
}

/** One message held back: `held` resolves when it arrived at the proxy, `delivered` when it went on to the server. */
export interface HeldMessage {
  readonly held: Promise<void>;
  readonly delivered: Promise<void>;
}

/**
 * A loopback TCP proxy in front of a MongoDB-protocol server that can hold back one client->server
 * message (and, to keep the stream in order, everything after it on that connection) for a while,
 * then deliver it: a write stalled on the way, as a paused process or a slow network produces it.
 */
export class StallProxy {
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly holds = new Set<Hold>();
  private readonly clients = new Set<Socket>();

  private constructor(private readonly server: Server) {}

  static async start(targetPort: number): Promise<StallProxy> {
    const server = createServer();
    const proxy = new StallProxy(server);
    server.on('connection', (client) => proxy.pipe(client, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Connections from clients that are still open (the proxy's own upstream sockets not counted). */
  get clientConnections(): number {
    return this.clients.size;
  }

  /** Holds back the next message that `matches` for `delayMs` (several holds may be armed at once). */
  holdNext(matches: MessageMatcher, delayMs: number): HeldMessage {
    let held!: () => void;
    let delivered!: () => void;
    const message = {
      held: new Promise<void>((resolve) => (held = resolve)),
      delivered: new Promise<void>((resolve) => (delivered = resolve)),
    };
    this.holds.add({ matches, delayMs, held, delivered });
    return message;
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    this.clients.add(client);
    let pending = Buffer.alloc(0);
    /** Until this local time, messages of this connection wait (the held one and all after it). */
    let heldUntil = 0;
    let inFlight = 0;
    let clientGone = false;
    // Like a network, the proxy still delivers what it holds after the client hung up, then hangs up too.
    const endUpstream = (): void => {
      if (inFlight === 0) upstream.end();
    };
    client.on('close', () => {
      clientGone = true;
      this.sockets.delete(client);
      this.clients.delete(client);
      endUpstream();
    });
    client.on('error', () => client.destroy());
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => upstream.destroy());
    upstream.on('data', (chunk: Buffer) => {
      if (!clientGone) client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        const hold = [...this.holds].find((candidate) => candidate.matches(message));
        if (hold) {
          this.holds.delete(hold);
          heldUntil = Math.max(heldUntil, Date.now() + hold.delayMs);
          hold.held();
        }
        const waitMs = heldUntil - Date.now();
        if (waitMs <= 0) {
          upstream.write(message);
          continue;
        }
        inFlight++;
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          inFlight--;
          if (!upstream.destroyed) upstream.write(message, () => hold?.delivered());
          if (clientGone) endUpstream();
        }, waitMs);
        this.timers.add(timer);
      }
    });
  }
}

/** A command message naming one of `commands` (BSON cstring key of a string element) and containing `text`. */
export function commandWith(commands: readonly string[], text: string, unless: readonly string[] = []): MessageMatcher {
  const names = commands.map((name) => Buffer.from(`\u0002${name}\u0000`, 'latin1'));
  const needle = Buffer.from(text, 'utf8');
  const excluded = unless.map((word) => Buffer.from(word, 'utf8'));
  return (message) =>
    names.some((name) => message.includes(name)) && message.includes(needle) && !excluded.some((word) => message.includes(word));
}
