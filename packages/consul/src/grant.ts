import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import type { ConsulHttp } from './consul-http.js';
import { modifyIndexOf, type TxnKvOp, type TxnResult, transact } from './kv.js';
import { sessionTtlFor } from './session.js';
import { type GrantSession, OwnSession, type Sessions } from './sessions.js';
import type { Monitored, SnapshotView } from './watch.js';
import type { Watches } from './watches.js';

/** What every grant and queue entry of one provider shares. */
export interface GrantContext {
  readonly http: ConsulHttp;
  readonly sessions: Sessions;
  readonly watches: Watches;
  /** The bound of a clean-up nobody waits for: the call timeout, cut short when close() runs out of time. */
  readonly background: () => AbortSignal;
  /** Keeps a clean-up nobody waits for until it ends, so that close() can let it finish first. */
  readonly track: (cleanup: Promise<void>) => void;
  /** Aborted as close() begins: clean-ups that retry stop retrying. */
  readonly closing: AbortSignal;
}

/** Where a grant is: on the server as written, or known gone (lost), or freed by its release. */
type State = 'held' | 'lost' | 'freed';

/** How a grant moves to a new session: the transaction, and the key whose new ModifyIndex it then watches from. */
export interface Move {
  readonly ops: TxnKvOp[];
  readonly indexKey: string;
}

/**
 * A grant held by a Consul session: a lock (lock.ts) or a semaphore slot (semaphore.ts). It lives
 * while its session does; it is watched until released or lost, and it alone changes its state. A
 * subclass says how to check, free and move it; it calls watch() once its own fields are set.
 */
export abstract class ConsulGrant implements BackendGrant, Monitored {
  private state: State = 'held';

  protected constructor(
    protected readonly context: GrantContext,
    protected session: GrantSession,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date | null,
    private readonly reportLost: (detail: string, cause?: unknown) => void,
    /** The index of the grant's latest write: the token until a lapsing grant moves to another session. */
    private index: bigint,
  ) {
    session.onExpired = (detail, cause) => this.lose(detail, cause);
  }

  abstract readonly watchKey: string;
  abstract lossIn(view: SnapshotView): string | undefined;
  /** Reads the server now: why the grant is gone, or undefined while it holds. */
  protected abstract check(signal: AbortSignal): Promise<string | undefined>;
  /** Frees the grant's place on the server; false when it was not (any more) this grant. */
  protected abstract free(signal: AbortSignal): Promise<boolean>;
  /** The transaction that moves the grant to `next`, or why it is no longer held. */
  protected abstract planMove(next: GrantSession, signal: AbortSignal): Promise<Move | string>;

  get sessionId(): string {
    return this.session.id;
  }

  get modifyIndex(): bigint {
    return this.index;
  }

  /** Auto-renewed grants live while their session does: extend() only checks. A lapsing one renews its own session. */
  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    if (this.state !== 'held') return NOT_HELD;
    const session = this.session;
    if (!(session instanceof OwnSession && session.lapsing)) return (await this.stillHeld(call.signal)) ? stillHeld(null) : NOT_HELD;
    const sentAt = Date.now();
    const wanted = sessionTtlFor(ttlMs);
    if (wanted !== session.ttlMs)
      return (await this.moveToNewSession(session, wanted, call.signal)) ? stillHeld(new Date(sentAt + ttlMs)) : NOT_HELD;
    if (!(await session.renew(call.signal))) {
      this.lose('its Consul session is gone (renew: 404)');
      return NOT_HELD;
    }
    return (await this.stillHeld(call.signal)) ? stillHeld(new Date(sentAt + ttlMs)) : NOT_HELD;
  }

  /** Frees the grant if it is still this one; called again by core until it answers (an unconfirmed or lost grant). */
  async release(call: CallContext): Promise<boolean> {
    this.stopWatching();
    if (this.state === 'freed') return false;
    const released = await this.free(call.signal);
    this.state = 'freed';
    // Only now: destroying a session that still holds the key would set a lock-delay on it.
    await this.session.leave(call.signal);
    return released;
  }

  async isHeld(call: CallContext): Promise<boolean> {
    return this.state === 'held' && this.stillHeld(call.signal);
  }

  /** The grant is gone (monitor, session, a check): the holder is told; its release is core's to retry. */
  lose(detail: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.stopWatching();
    this.reportLost(detail, cause);
  }

  protected watch(): void {
    this.context.watches.monitor(this);
  }

  private stopWatching(): void {
    this.context.watches.unmonitor(this);
    this.session.stopRenewing();
  }

  private async stillHeld(signal: AbortSignal): Promise<boolean> {
    const loss = await this.check(signal);
    if (loss === undefined) return true;
    this.lose(loss);
    return false;
  }

  /**
   * A Consul session's TTL is fixed at creation: a lapsing grant extended with another TTL moves to a
   * new session in one transaction, conditioned on what was just read. The token stays valid: nobody
   * else held the grant's place in between.
   */
  private async moveToNewSession(current: OwnSession, sessionTtlMs: number, signal: AbortSignal): Promise<boolean> {
    const next = await this.context.sessions.lapsing(sessionTtlMs, current.name, signal);
    let move: Move | string;
    try {
      move = await this.planMove(next, signal);
    } catch (error) {
      next.disown();
      throw error;
    }
    if (typeof move === 'string') {
      await next.leave(signal);
      this.lose(move);
      return false;
    }
    // Not watched while it moves: a read may show the new session before our answer arrives.
    this.context.watches.unmonitor(this);
    let moved: TxnResult;
    try {
      moved = await transact(this.context.http, move.ops, signal);
    } catch (error) {
      // Unknown outcome: presumed lost. Both sessions go, and whichever holds the grant takes it along (behaviour delete).
      this.lose('extend could not confirm the move to a new session', error);
      next.disown();
      this.session.disown();
      throw error;
    }
    if (!moved.ok) {
      await next.leave(signal);
      this.lose('the key changed while extend moved it to a new session');
      return false;
    }
    const old = this.session;
    this.session = next;
    this.index = modifyIndexOf(moved.entries, move.indexKey);
    if (this.state === 'held') this.watch();
    await old.leave(signal);
    return true;
  }
}

/** Core stopped waiting for this answer (it abandons the request): nothing may keep the grant alive. */
export function unlessAbandoned<G extends ConsulGrant>(grant: G, context: GrantContext, call: CallContext): G {
  if (call.signal.aborted) {
    grant
      .release({ signal: context.background() })
      .catch((error: unknown) => grant.lose('the acquire was abandoned before its answer arrived', error));
  }
  return grant;
}
