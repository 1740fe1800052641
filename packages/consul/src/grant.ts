import { type BackendGrant, type CallContext, type Extension, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import { LOCK_FLAG } from './constants.js';
import type { ConsulHttp } from './consul-http.js';
import { type GrantSession, LapsingSession, type Sessions, sessionTtlFor } from './grant-session.js';
import { type KvEntry, modifyIndexOf, readKey, type TxnResult, transact } from './kv.js';
import { provesGrant } from './ownership.js';
import { releaseExact } from './release.js';
import type { Monitored } from './watch.js';
import type { Watches } from './watches.js';

/** What every grant of one provider shares. */
export interface GrantContext {
  readonly http: ConsulHttp;
  readonly sessions: Sessions;
  readonly watches: Watches;
  /** The bound of a clean-up nobody waits for: the call timeout, cut short when close() runs out of time. */
  readonly background: () => AbortSignal;
}

/** Where a grant is: on the key as written, or known gone (lost), or freed by its release. */
type State = 'held' | 'lost' | 'freed';

/**
 * One lock this provider holds on `<prefix>/<key>`: the session that holds it and the ModifyIndex of
 * its write (the fencing token, which is also how a release tells this grant from a later one of the
 * same session). Watched from the grant until it is released or lost; it alone changes its state.
 */
export class ConsulGrant implements BackendGrant, Monitored {
  private state: State = 'held';

  constructor(
    private readonly context: GrantContext,
    readonly consulKey: string,
    readonly lockId: string,
    private session: GrantSession,
    readonly token: bigint,
    readonly acquiredAt: Date,
    readonly expiresAt: Date | null,
    private readonly reportLost: (detail: string, cause?: unknown) => void,
    /** The key's current ModifyIndex: the token until a lapsing lock moves to another session. */
    private index: bigint = token,
  ) {
    session.onExpired = (detail, cause) => this.lose(detail, cause);
    context.watches.monitor(this);
  }

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
    if (!(session instanceof LapsingSession)) return (await this.stillOurs(call.signal)) ? stillHeld(null) : NOT_HELD;
    const sentAt = Date.now();
    const wanted = sessionTtlFor(ttlMs);
    if (wanted !== session.ttlMs)
      return (await this.moveToNewSession(wanted, call.signal)) ? stillHeld(new Date(sentAt + ttlMs)) : NOT_HELD;
    if (!(await session.renew(call.signal))) {
      this.lose('its Consul session is gone (renew: 404)');
      return NOT_HELD;
    }
    return (await this.stillOurs(call.signal)) ? stillHeld(new Date(sentAt + ttlMs)) : NOT_HELD;
  }

  /** Frees the key if it is still this grant; called again by core until it answers (an unconfirmed or lost grant). */
  async release(call: CallContext): Promise<boolean> {
    this.stopWatching();
    if (this.state === 'freed') return false;
    const released = await releaseExact(this.context.http, this, call.signal);
    this.state = 'freed';
    // Only now: destroying a session that still holds the key would set a lock-delay on it.
    await this.session.leave(call.signal);
    return released;
  }

  async isHeld(call: CallContext): Promise<boolean> {
    return this.state === 'held' && this.stillOurs(call.signal);
  }

  /** The grant is gone (monitor, session, a check): the holder is told; its release is core's to retry. */
  lose(detail: string, cause?: unknown): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.stopWatching();
    this.reportLost(detail, cause);
  }

  private stopWatching(): void {
    this.context.watches.unmonitor(this);
    this.session.stopRenewing();
  }

  private async stillOurs(signal: AbortSignal): Promise<boolean> {
    const { entry } = await readKey(this.context.http, this.consulKey, true, signal);
    if (provesGrant(entry, this)) return true;
    this.lose(entry ? 'the key no longer holds this grant' : 'the key was deleted');
    return false;
  }

  /**
   * A Consul session's TTL is fixed at creation: a lapsing lock extended with another TTL moves to a
   * new session in one transaction (checked against the grant's ModifyIndex, then unlock + lock, which
   * sets no lock-delay). The key's ModifyIndex moves on; the token stays valid as nobody else held the
   * key in between.
   */
  private async moveToNewSession(sessionTtlMs: number, signal: AbortSignal): Promise<boolean> {
    const next = await this.context.sessions.lapsing(sessionTtlMs, signal);
    let entry: KvEntry | null;
    try {
      ({ entry } = await readKey(this.context.http, this.consulKey, true, signal));
    } catch (error) {
      next.disown();
      throw error;
    }
    if (!provesGrant(entry, this)) {
      await next.leave(signal);
      this.lose(entry ? 'the key no longer holds this grant' : 'the key was deleted');
      return false;
    }
    // Not watched while it moves: a read may show the new session before our answer arrives.
    this.context.watches.unmonitor(this);
    let moved: TxnResult;
    try {
      moved = await transact(
        this.context.http,
        [
          { Verb: 'check-index', Key: this.consulKey, Index: entry!.ModifyIndex },
          { Verb: 'unlock', Key: this.consulKey, Session: this.session.id, Flags: LOCK_FLAG, Value: entry!.Value ?? '' },
          { Verb: 'lock', Key: this.consulKey, Session: next.id, Flags: LOCK_FLAG, Value: entry!.Value ?? '' },
        ],
        signal,
      );
    } catch (error) {
      // Unknown outcome: presumed lost. Both sessions go, and whichever holds the key takes it along (behaviour delete).
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
    this.index = modifyIndexOf(moved.entries, this.consulKey);
    if (this.state === 'held') this.context.watches.monitor(this);
    await old.leave(signal);
    return true;
  }
}
