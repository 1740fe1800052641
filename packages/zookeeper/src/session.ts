import { BackendError } from '@holdfast/core';
import { sleep } from '@holdfast/core/backend';
import zookeeper, { type Client, type State } from 'node-zookeeper-client';

/** What happened to the session, as held grants must hear it. */
export type SessionLoss = 'suspended' | 'expired' | 'closed';

/** Where a provider's session is: Curator's connection states. */
export type SessionState = 'connecting' | 'connected' | SessionLoss;

export interface SessionOptions {
  readonly connectionString: string;
  readonly sessionTimeoutMs: number;
  /** The app's own client: used as is, never closed by the provider, never replaced after an expiry. */
  readonly client?: Client;
}

/**
 * One ZooKeeper session per provider, with Curator's rules: a dropped connection is SUSPENDED (every
 * holder is told at once: the session may expire on the server while we are cut off, and we cannot
 * know), an expired session is LOST and a fresh client with a new session replaces it on next use.
 *
 * node-zookeeper-client sends pings but never gives up on a silent server (a stalled connection
 * stays "connected"), so the session also proves itself: a read every third of the session timeout,
 * checked every sixth, and SUSPENDED when none sent in the last two thirds was answered (the Java
 * client's read timeout), before the server can expire the session: it waits the whole timeout
 * after the last request it received, which was sent no earlier than the last answered one.
 */
export class ZkSession {
  private current: Client | undefined;
  private state: SessionState = 'connecting';
  /** performance.now() when the last proof of life was sent (its answer came). */
  private provenAt = 0;
  private readonly listeners = new Set<(loss: SessionLoss, detail: string) => void>();
  private readonly stateChanged = new Set<() => void>();
  private pinger: NodeJS.Timeout | undefined;
  private pingInFlight = false;
  private closed = false;

  constructor(private readonly options: SessionOptions) {}

  /** The live client (connecting a new one after an expiry or a suspension we gave up on). */
  client(): Client {
    if (this.closed) throw new BackendError('zookeeper', 'the provider is closed');
    if (!this.current) this.open();
    return this.current!;
  }

  get sessionTimeoutMs(): number {
    return this.options.sessionTimeoutMs;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  /** The session id (hex) while connected: a holder's node is ephemeral to it. */
  sessionId(): string | undefined {
    return this.current?.getSessionId().toString('hex');
  }

  /**
   * Resolves at once while connected; otherwise waits for the connection up to half the session
   * timeout, then fails: the client retries its servers forever, and a caller must hear "the
   * backend is unreachable" (a BackendError core retries) instead of a request parked until its bound.
   */
  ready(signal: AbortSignal): Promise<void> | undefined {
    this.client();
    if (this.state === 'connected') return undefined;
    const waitMs = Math.max(250, Math.floor(this.options.sessionTimeoutMs / 2));
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: Error): void => {
        clearTimeout(timer);
        this.stateChanged.delete(check);
        signal.removeEventListener('abort', aborted);
        if (error) reject(error);
        else resolve();
      };
      const check = (): void => {
        if (this.state === 'connected') finish();
      };
      const aborted = (): void => finish(new BackendError('zookeeper', 'not connected to ZooKeeper when the call was given up'));
      const timer = setTimeout(
        () =>
          finish(
            new BackendError(
              'zookeeper',
              `no ZooKeeper server of ${this.options.connectionString || 'the client'} answered within ${waitMs} ms`,
            ),
          ),
        waitMs,
      );
      this.stateChanged.add(check);
      if (signal.aborted) aborted();
      else signal.addEventListener('abort', aborted, { once: true });
    });
  }

  /** Told of every suspension, expiry or close; returns the unsubscribe. */
  onLoss(listener: (loss: SessionLoss, detail: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves at the next state change (a waiter re-reads then), or at once if not connected. */
  nextChange(): { promise: Promise<void>; cancel(): void } {
    let cancel = (): void => undefined;
    const promise = new Promise<void>((resolve) => {
      if (this.state !== 'connected') return resolve();
      const done = (): void => {
        this.stateChanged.delete(done);
        resolve();
      };
      this.stateChanged.add(done);
      cancel = done;
    });
    return { promise, cancel };
  }

  private open(): void {
    const client =
      this.options.client ??
      zookeeper.createClient(this.options.connectionString, {
        sessionTimeout: this.options.sessionTimeoutMs,
        // Between two rounds over the servers: short, loopback or LAN.
        spinDelay: SPIN_DELAY_MS,
        retries: 0,
      });
    this.current = client;
    this.state = 'connecting';
    client.on('state', (state: State) => this.onState(client, state));
    if (this.options.client) {
      if (client.getState() === zookeeper.State.SYNC_CONNECTED) this.onState(client, zookeeper.State.SYNC_CONNECTED);
    } else client.connect();
  }

  private onState(client: Client, state: State): void {
    if (client !== this.current) return;
    const { State: S } = zookeeper;
    if (state === S.SYNC_CONNECTED) {
      this.state = 'connected';
      this.provenAt = performance.now();
      this.startPinging();
    } else if (state === S.DISCONNECTED) {
      this.lose('suspended', 'the connection to ZooKeeper dropped: the session may expire while we are cut off (SUSPENDED)');
    } else if (state === S.EXPIRED) {
      this.lose('expired', 'the ZooKeeper session expired: its ephemeral nodes are gone (LOST)');
      this.drop();
    }
    this.announce();
  }

  private lose(loss: SessionLoss, detail: string): void {
    if (this.state === loss) return;
    this.state = loss;
    this.stopPinging();
    for (const listener of [...this.listeners]) listener(loss, detail);
  }

  private announce(): void {
    for (const done of [...this.stateChanged]) done();
  }

  private startPinging(): void {
    if (this.pinger) return;
    const timeout = this.options.sessionTimeoutMs;
    this.pinger = setInterval(() => this.proveAlive(timeout), Math.max(50, Math.floor(timeout / 6)));
    this.pinger.unref();
  }

  private stopPinging(): void {
    clearInterval(this.pinger);
    this.pinger = undefined;
  }

  /** Every tick (a sixth of the timeout) checks the last proof and sends a new one unless one is still on its way. */
  private proveAlive(timeoutMs: number): void {
    const client = this.current;
    if (!client || this.state !== 'connected') return;
    if (performance.now() - this.provenAt > (timeoutMs * 2) / 3) {
      // Silent for two thirds of the session (the Java client's read timeout): give this client up
      // (its session may expire any moment) for a new one.
      this.lose('suspended', `ZooKeeper answered nothing for ${Math.round((timeoutMs * 2) / 3)} ms: the session may expire (SUSPENDED)`);
      this.drop();
      this.announce();
      return;
    }
    if (this.pingInFlight) return;
    this.pingInFlight = true;
    const sentAt = performance.now();
    client.exists('/', (error) => {
      this.pingInFlight = false;
      if (!error && client === this.current) this.provenAt = Math.max(this.provenAt, sentAt);
    });
  }

  /** Forgets the current client; the next call opens a new session (an app's client cannot be replaced). */
  private drop(): void {
    const client = this.current;
    if (!client || this.options.client) return;
    this.current = undefined;
    hardClose(client);
  }

  /** Closes the session (its ephemeral nodes go at once) unless the client is the app's. */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    this.stopPinging();
    this.lose('closed', 'the provider closed');
    const client = this.current;
    this.current = undefined;
    if (!client || this.options.client) return;
    if (client.getState() === zookeeper.State.SYNC_CONNECTED) await closeSession(client, signal);
    hardClose(client);
    // A reconnect already scheduled (after a spin delay) may still open a socket: end that one too.
    await sleep(SPIN_DELAY_MS + 20);
    hardClose(client);
  }
}

/** Asks the server to end the session (its ephemeral nodes go at once), until `signal` aborts. */
function closeSession(client: Client, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      signal.removeEventListener('abort', abort);
      resolve();
    };
    const abort = (): void => {
      done();
    };
    client.once('disconnected', done);
    signal.addEventListener('abort', abort, { once: true });
    client.close();
  });
}

interface Internals {
  connectionManager?: { setState?(state: number): void; socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout };
}

/** Between two rounds over the servers, in ms; also how long a reconnect scheduled before a hard close may still fire. */
export const SPIN_DELAY_MS = 100;

/**
 * Ends the client's socket and reconnect loop at once: close() alone queues a close request for a
 * server that may not answer, and the client would reconnect after a dropped socket.
 */
export function hardClose(client: Client): void {
  const manager = (client as unknown as Internals).connectionManager;
  client.removeAllListeners();
  // CLOSING (-1) makes the socket's close final: no reconnect.
  manager?.setState?.(-1);
  clearTimeout(manager?.connectTimeoutHandler);
  manager?.socket?.destroy();
}
