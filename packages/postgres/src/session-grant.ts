import type { GrantRequest } from '@holdfast/core/backend';
import {
  type BackendGrant,
  type CallContext,
  type Extension,
  NOT_HELD,
  type ScheduledTask,
  safetyDeadline,
  stillHeld,
  type TimerHeap,
} from '@holdfast/core/backend';
import type pg from 'pg';
import type { SessionConnections } from './session-connections.js';
import type { SessionStatements } from './session-statements.js';
import type { TableQuery } from './table-query.js';

/** What every session grant of a provider shares. */
export interface SessionContext {
  readonly connections: SessionConnections;
  readonly sql: SessionStatements;
  /** For isHeld: asked on a pooled connection, so that asking does not keep the holder's session busy. */
  readonly query: TableQuery;
  readonly timers: TimerHeap;
}

/** The holder's own connection and what identifies its lock on the server. */
export interface Session {
  readonly client: pg.PoolClient;
  /** The server process of the connection, which holds the advisory lock. */
  readonly pid: number;
  readonly lock: bigint;
  /** A reader's lock (shared), given back with the shared unlock; a plain lock's and a writer's are exclusive. */
  readonly shared: boolean;
}

/**
 * A lock held by a session: as long as its connection lives and talks. The connection ending (an
 * error, the server ending it, a forced release) is reported at once. With autoRenew a heartbeat
 * every third of the TTL keeps the session from its idle timeout and checks that the same server
 * process still holds the lock (a transaction-mode pooler would swap it); a heartbeat not answered
 * by the safety deadline ends the session. Without autoRenew the session times out at the TTL.
 */
export class SessionGrant implements BackendGrant, ScheduledTask {
  readonly expiresAt: Date | null;
  private ended = false;
  private ttlMs: number;
  /** When the last request the server confirmed was sent: its idle clock started no earlier. */
  private talkedAt: number;
  private beat: AbortController | null = null;
  private readonly onError = (error: unknown): void => this.lose('its session connection failed', error);
  private readonly onEnd = (): void => this.lose('its session connection ended');

  constructor(
    private readonly context: SessionContext,
    private readonly session: Session,
    private readonly request: GrantRequest,
    readonly token: bigint,
    readonly acquiredAt: Date,
    sentAt: number,
  ) {
    this.ttlMs = request.ttlMs;
    this.talkedAt = sentAt;
    this.expiresAt = request.autoRenew ? null : new Date(acquiredAt.getTime() + request.ttlMs);
    session.client.on('error', this.onError);
    session.client.on('end', this.onEnd);
    if (request.autoRenew) context.timers.schedule(this, sentAt + this.ttlMs / 3);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    if (this.ended) return NOT_HELD;
    const sentAt = Date.now();
    const held = await this.ask(this.context.sql.extend, [ttlMs], call.signal);
    if (!held) return NOT_HELD;
    this.ttlMs = ttlMs;
    this.talked(sentAt);
    return stillHeld(this.request.autoRenew ? null : new Date(sentAt + ttlMs));
  }

  async release(call: CallContext): Promise<boolean> {
    if (this.ended) return false;
    this.end();
    const { client, lock, shared } = this.session;
    const { sql } = this.context;
    let unlocked = false;
    try {
      const [row] = await this.context.connections.run<{ unlocked: boolean }>(
        client,
        shared ? sql.releaseShared : sql.release,
        [lock],
        call.signal,
      );
      unlocked = row?.unlocked === true;
      return unlocked;
    } finally {
      // A connection that did not just give the lock back is cut: the server then frees whatever it held.
      if (unlocked) this.context.connections.giveBack(client);
      else this.context.connections.discard(client);
    }
  }

  async isHeld(call: CallContext): Promise<boolean> {
    if (this.ended) return false;
    const [row] = await this.context.query.run<{ held: boolean }>(
      this.context.sql.check,
      [this.session.lock, this.session.pid],
      call.signal,
    );
    if (row?.held !== true) this.lose('its session no longer holds the lock');
    return row?.held === true;
  }

  /** Heartbeat tick, or its watchdog at the safety deadline. */
  run(): void {
    if (this.ended) return;
    const deadline = safetyDeadline(this.talkedAt, this.ttlMs);
    if (Date.now() >= deadline) {
      this.lose('no heartbeat was answered before its session could time out');
      return;
    }
    this.context.timers.schedule(this, deadline);
    if (!this.beat) void this.heartbeat();
  }

  private async heartbeat(): Promise<void> {
    const beat = new AbortController();
    this.beat = beat;
    const sentAt = Date.now();
    try {
      if (!(await this.ask(this.context.sql.check, [], beat.signal))) return;
      this.talked(sentAt);
    } catch (error) {
      this.lose('its heartbeat failed', error);
    } finally {
      if (this.beat === beat) this.beat = null;
    }
  }

  /** Runs `text` (check or extend) on the session: false, and the grant ended, unless the same server process still holds the lock. */
  private async ask(text: string, extra: readonly unknown[], signal: AbortSignal): Promise<boolean> {
    const { client, lock, pid } = this.session;
    const [row] = await this.context.connections.run<{ me: number; held: boolean }>(client, text, [lock, pid, ...extra], signal);
    const held = row?.held === true && row.me === pid;
    if (!held) {
      this.lose(
        row?.me !== pid
          ? `its connection now reaches another server process (${row?.me}, not ${pid}): a pooler in transaction mode? Session mode needs a real session`
          : 'its session no longer holds the lock',
      );
    }
    return held;
  }

  private talked(sentAt: number): void {
    this.talkedAt = Math.max(this.talkedAt, sentAt);
    if (this.request.autoRenew && !this.ended) this.context.timers.schedule(this, this.talkedAt + this.ttlMs / 3);
  }

  /** The lock is gone, or in doubt: cut the session (the server frees the lock) and tell the holder. */
  private lose(detail: string, cause?: unknown): void {
    if (this.ended) return;
    this.end();
    this.context.connections.discard(this.session.client);
    this.request.onLost(detail, cause);
  }

  private end(): void {
    this.ended = true;
    this.context.timers.cancel(this);
    this.beat?.abort();
    this.session.client.off('error', this.onError);
    this.session.client.off('end', this.onEnd);
  }
}
