import type { ClientDuplexStream } from '@grpc/grpc-js';
import { safetyMargin } from '@holdfast/core/backend';
import { type EtcdRpc, failure } from './rpc.js';

export type LossListener = (detail: string, cause?: unknown) => void;

interface LeaseGrantResponse {
  readonly ID: string;
  readonly TTL: string;
  readonly error: string;
}

interface KeepAliveResponse {
  readonly TTL: string;
}

/** How soon a broken keep-alive stream is opened again (the lease's deadline decides loss, not this). */
const REOPEN_MS = 200;

/**
 * A lease, like etcd's concurrency.Session: granted once, kept alive over a LeaseKeepAlive stream
 * every TTL/3 (session.go leaves that to the client's lessor, which sends at TTL/3), and declared
 * lost, for good, when etcd answers TTL 0 (expired or revoked) or when no answer came before the
 * lease could have run out on the server: the deadline is counted from when the request was sent,
 * so it is never later than the server's, minus core's safety margin. Then every holder on it is
 * told (`onLost`) and the provider grants a new session for later attempts.
 *
 * A lease that is not kept alive (locks with `autoRenew: false`) just runs out on the server.
 */
export class Session {
  readonly hex: string;
  private readonly listeners = new Set<LossListener>();
  private lostDetail: string | undefined;
  private stream: ClientDuplexStream<unknown, unknown> | undefined;
  private readonly pendingSends: number[] = [];
  private tick: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private reopen: NodeJS.Timeout | undefined;

  private constructor(
    private readonly rpc: EtcdRpc,
    /** The lease id, a decimal int64. */
    readonly id: string,
    readonly ttlMs: number,
    readonly keptAlive: boolean,
  ) {
    this.hex = BigInt(id).toString(16);
  }

  /** LeaseGrant of `ttlSeconds` (etcd raises it to its minimum TTL, about 2 s by default). */
  static async grant(rpc: EtcdRpc, ttlSeconds: number, keepAlive: boolean, signal: AbortSignal): Promise<Session> {
    const sentAt = Date.now();
    const res = await rpc.unary<LeaseGrantResponse>(rpc.lease, 'LeaseGrant', { TTL: String(ttlSeconds), ID: '0' }, signal);
    if (res.error) throw failure('LeaseGrant', res.error);
    const session = new Session(rpc, res.ID, Number(res.TTL) * 1000, keepAlive);
    if (keepAlive) {
      session.armDeadline(sentAt + session.ttlMs);
      session.openStream();
      session.tick = setInterval(() => session.keepAliveOnce(), Math.max(100, session.ttlMs / 3));
      session.tick.unref();
    }
    return session;
  }

  get alive(): boolean {
    return this.lostDetail === undefined;
  }

  /** Calls `listener` once when the session is lost (at once, asynchronously, if it already is). */
  onLost(listener: LossListener): () => void {
    if (this.lostDetail !== undefined) {
      const detail = this.lostDetail;
      queueMicrotask(() => listener(detail));
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops keeping the lease alive and revokes it (its entries vanish at once); never throws. */
  async close(signal: AbortSignal): Promise<void> {
    this.stop('the provider closed');
    this.listeners.clear();
    await this.rpc.unary(this.rpc.lease, 'LeaseRevoke', { ID: this.id }, signal).catch(() => undefined);
  }

  /** Declares the session lost: every holder on it is told, and it is never used again. */
  lose(detail: string, cause?: unknown): void {
    if (this.lostDetail !== undefined) return;
    this.stop(detail);
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(detail, cause);
  }

  private stop(detail: string): void {
    this.lostDetail ??= detail;
    clearInterval(this.tick);
    clearTimeout(this.deadline);
    clearTimeout(this.reopen);
    const stream = this.stream;
    this.stream = undefined;
    stream?.cancel();
  }

  private armDeadline(serverExpiry: number): void {
    clearTimeout(this.deadline);
    const lostAt = serverExpiry - safetyMargin(this.ttlMs);
    this.deadline = setTimeout(
      () => this.lose(`lease ${this.hex}: no keep-alive answer before it could have run out on etcd`),
      Math.max(0, lostAt - Date.now()),
    );
    this.deadline.unref();
  }

  private openStream(): void {
    const stream = this.rpc.stream(this.rpc.lease, 'LeaseKeepAlive');
    this.stream = stream;
    this.pendingSends.length = 0;
    stream.on('data', (res: KeepAliveResponse) => {
      const sentAt = this.pendingSends.shift();
      const ttl = Number(res.TTL);
      if (ttl <= 0) this.lose(`lease ${this.hex} expired or was revoked on etcd`);
      else if (sentAt !== undefined) this.armDeadline(sentAt + ttl * 1000);
    });
    const broken = (): void => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      if (this.lostDetail !== undefined) return;
      // Reconnect and go on sending; only the deadline declares the lease lost.
      this.reopen = setTimeout(() => {
        if (this.lostDetail === undefined && !this.stream) this.openStream();
      }, REOPEN_MS);
      this.reopen.unref();
    };
    stream.on('error', broken);
    stream.on('end', broken);
    this.keepAliveOnce();
  }

  private keepAliveOnce(): void {
    if (!this.stream || this.lostDetail !== undefined) return;
    this.pendingSends.push(Date.now());
    this.stream.write({ ID: this.id });
  }
}
