import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertLoopback, listenOnLoopback, type ServerAddress } from './address.js';

/**
 * What a cut leaves behind: 'silent' accepts new connections and never answers, 'refuse' stops
 * listening, 'reset' accepts and closes each new connection at once (a server down behind a port
 * that stays open, which restore() brings back: a client then reconnects as to a restarted server).
 */
export type CutMode = 'silent' | 'refuse' | 'reset';

export interface HeldChunk {
  /** Which accepted connection the chunk came from (1-based, in accept order). */
  readonly connection: number;
  readonly bytes: number;
  /** The chunk's printable characters, for diagnostics. */
  readonly preview: string;
}

/** One armed "hold the k-th client->server chunk" fault. */
export interface ChunkHold {
  /** Resolves when the k-th chunk arrived and is being held; stays pending if it never comes. */
  readonly engaged: Promise<HeldChunk>;
  /** Resolves once the held chunk was passed on, or dropped by cut()/close()/cancel(). */
  readonly released: Promise<void>;
  /** Disarms the hold if it has not engaged yet; a chunk already held is passed on at once. */
  cancel(): void;
}

interface Hold {
  readonly afterChunk: number;
  readonly ms: number;
  readonly cancelled: AbortController;
  engage(chunk: HeldChunk): void;
  release(): void;
}

interface Pipe {
  readonly id: number;
  readonly client: Socket;
  readonly upstream: Socket;
  toUpstream: Promise<void>;
  toClient: Promise<void>;
  /** Resolves once the server closed its side. */
  readonly upstreamClosed: Promise<void>;
}

/**
 * A loopback TCP proxy for fault tests: forwards to one upstream address and can hold back a chosen
 * client->server chunk (and, TCP being ordered, everything after it on that connection), pause both
 * directions, or cut every connection.
 */
export class FaultProxy {
  private readonly pipes = new Set<Pipe>();
  private readonly silent = new Set<Socket>();
  private readonly holds = new Set<Hold>();
  private readonly closing = new AbortController();
  private mode: 'forward' | CutMode = 'forward';
  private clientChunks = 0;
  private accepted = 0;
  private pauseGate: { promise: Promise<void>; open(): void } | undefined;
  private listening = true;

  private constructor(
    private readonly server: Server,
    private readonly upstream: ServerAddress,
    /** Where clients connect: hand this to the provider under test. */
    readonly address: ServerAddress,
  ) {}

  static async start(upstream: ServerAddress): Promise<FaultProxy> {
    assertLoopback(upstream, 'the proxy upstream');
    const server = createServer({ allowHalfOpen: true });
    const address = await listenOnLoopback(server);
    const proxy = new FaultProxy(server, upstream, address);
    server.on('connection', (socket) => proxy.accept(socket));
    return proxy;
  }

  /** Client->server chunks seen so far (all connections). */
  get chunksFromClients(): number {
    return this.clientChunks;
  }

  /** Connections accepted so far. */
  get connectionsAccepted(): number {
    return this.accepted;
  }

  /** Connections currently open on the client side (forwarded or silent). */
  get openConnections(): number {
    return this.pipes.size + this.silent.size;
  }

  /**
   * Resolves once the server has closed its side of accepted connection `id` (HeldChunk.connection),
   * at once if it is closed already: the server then has run everything that reached it on it.
   */
  upstreamClosed(id: number): Promise<void> {
    for (const pipe of this.pipes) if (pipe.id === id) return pipe.upstreamClosed;
    return Promise.resolve();
  }

  /**
   * Holds the k-th client->server chunk that arrives after this call (k = 1 is the next one, on
   * whichever connection) for `ms`; later bytes on the same connection wait behind it.
   */
  holdClientChunk(k: number, ms: number): ChunkHold {
    if (!Number.isInteger(k) || k < 1) throw new Error(`k must be a positive integer, got ${k}`);
    let engage!: (chunk: HeldChunk) => void;
    let release!: () => void;
    const engaged = new Promise<HeldChunk>((resolve) => (engage = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const hold: Hold = { afterChunk: this.clientChunks + k, ms, cancelled: new AbortController(), engage, release };
    this.holds.add(hold);
    return {
      engaged,
      released,
      cancel: () => {
        hold.cancelled.abort();
        if (this.holds.delete(hold)) release();
      },
    };
  }

  /** Stops forwarding in both directions; bytes are buffered until resume(). */
  pause(): void {
    if (this.pauseGate) return;
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.pauseGate = { promise, open };
  }

  resume(): void {
    const gate = this.pauseGate;
    this.pauseGate = undefined;
    gate?.open();
  }

  /** Destroys every connection; afterwards new connections are accepted-and-silent or refused. */
  cut(mode: CutMode = 'silent'): void {
    this.mode = mode;
    this.destroyAll();
    if (mode === 'refuse') this.stopListening();
  }

  /** After a 'silent' or 'reset' cut: new connections are forwarded again (the silent ones stay silent). */
  restore(): void {
    if (this.listening) this.mode = 'forward';
  }

  async close(): Promise<void> {
    this.mode = 'refuse';
    this.closing.abort();
    this.destroyAll();
    for (const hold of this.holds) hold.release();
    this.holds.clear();
    this.resume();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.listening = false;
    await closed;
  }

  private stopListening(): void {
    if (!this.listening) return;
    this.listening = false;
    this.server.close();
  }

  private destroyAll(): void {
    for (const pipe of this.pipes) {
      pipe.client.destroy();
      pipe.upstream.destroy();
    }
    this.pipes.clear();
    for (const socket of this.silent) socket.destroy();
    this.silent.clear();
    for (const hold of this.holds) {
      if (hold.afterChunk <= this.clientChunks) hold.cancelled.abort();
    }
  }

  private accept(client: Socket): void {
    this.accepted++;
    client.on('error', () => client.destroy());
    if (this.mode === 'reset') {
      client.destroy();
      return;
    }
    if (this.mode !== 'forward') {
      // A cut server: the connection opens and nothing ever comes back.
      this.silent.add(client);
      client.on('close', () => this.silent.delete(client));
      client.on('end', () => void client.end());
      client.resume();
      return;
    }
    client.setNoDelay(true);
    const upstream = createConnection({ host: this.upstream.host, port: this.upstream.port, allowHalfOpen: true });
    upstream.setNoDelay(true);
    const upstreamClosed = new Promise<void>((resolve) => upstream.once('close', () => resolve()));
    const pipe: Pipe = { id: this.accepted, client, upstream, toUpstream: Promise.resolve(), toClient: Promise.resolve(), upstreamClosed };
    this.pipes.add(pipe);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      this.pipes.delete(pipe);
    };
    upstream.on('error', drop);
    client.on('error', drop);
    client.on('close', () => this.afterSend(pipe, 'toUpstream', () => void upstream.end()));
    upstream.on('close', () => this.afterSend(pipe, 'toClient', drop));
    client.on('data', (chunk: Buffer) => this.fromClient(pipe, chunk));
    upstream.on('data', (chunk: Buffer) => this.send(pipe, 'toClient', chunk, undefined));
    client.on('end', () => this.afterSend(pipe, 'toUpstream', () => void upstream.end()));
    upstream.on('end', () => this.afterSend(pipe, 'toClient', () => void client.end()));
  }

  private fromClient(pipe: Pipe, chunk: Buffer): void {
    this.clientChunks++;
    let hold: Hold | undefined;
    for (const candidate of this.holds) {
      if (candidate.afterChunk === this.clientChunks) hold = candidate;
    }
    if (hold) {
      this.holds.delete(hold);
      hold.engage({ connection: pipe.id, bytes: chunk.length, preview: printable(chunk) });
    }
    this.send(pipe, 'toUpstream', chunk, hold);
  }

  private send(pipe: Pipe, direction: 'toUpstream' | 'toClient', chunk: Buffer, hold: Hold | undefined): void {
    const to = direction === 'toUpstream' ? pipe.upstream : pipe.client;
    this.afterSend(pipe, direction, async () => {
      if (hold) {
        const signal = AbortSignal.any([hold.cancelled.signal, this.closing.signal]);
        await sleep(hold.ms, undefined, { signal }).catch(() => undefined);
        hold.release();
      }
      while (this.pauseGate) await this.pauseGate.promise;
      if (!to.destroyed && to.writable) to.write(chunk);
    });
  }

  /** Runs `step` after everything already queued in that direction, keeping TCP's byte order. */
  private afterSend(pipe: Pipe, direction: 'toUpstream' | 'toClient', step: () => void | Promise<void>): void {
    pipe[direction] = pipe[direction].then(step).catch(() => undefined);
  }
}

function printable(chunk: Buffer): string {
  return chunk
    .toString('latin1')
    .replace(/[^\x20-\x7e]+/g, '.')
    .slice(0, 160);
}
