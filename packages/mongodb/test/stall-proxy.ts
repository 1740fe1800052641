import { type AddressInfo, type Server, type Socket, createServer, connect } from 'node:net';

/** Decides whether one client->server MongoDB wire message is the one to hold back. */
export type MessageMatcher = (message: Buffer) => boolean;

interface Hold {
  readonly matches: MessageMatcher;
  readonly delayMs: number;
  readonly held: () => void;
}

/**
 * A loopback TCP proxy in front of a MongoDB-protocol server that can hold back one client->server
 * message (and, to keep the stream in order, everything after it on that connection) for a while,
 * then deliver it: a write stalled on the way, as a paused process or a slow network produces it.
 */
export class StallProxy {
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private hold: Hold | undefined;

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

  /** Holds back the next message that `matches` for `delayMs`; resolves once such a message arrived. */
  holdNext(matches: MessageMatcher, delayMs: number): Promise<void> {
    return new Promise((held) => (this.hold = { matches, delayMs, held }));
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect(targetPort, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    const forget = (): void => {
      this.sockets.delete(client);
      this.sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('close', forget).on('error', forget);
    upstream.on('close', forget).on('error', forget);
    upstream.pipe(client);
    let pending = Buffer.alloc(0);
    /** Until this local time, messages of this connection wait (the held one and all after it). */
    let heldUntil = 0;
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const message = pending.subarray(0, pending.readInt32LE(0));
        pending = pending.subarray(message.length);
        const hold = this.hold;
        if (hold && hold.matches(message)) {
          this.hold = undefined;
          heldUntil = Math.max(heldUntil, Date.now() + hold.delayMs);
          hold.held();
        }
        const waitMs = heldUntil - Date.now();
        if (waitMs <= 0) {
          upstream.write(message);
          continue;
        }
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (!upstream.destroyed) upstream.write(message);
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
