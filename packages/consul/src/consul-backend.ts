import { setMaxListeners } from 'node:events';
import type { Capabilities, LockInfo } from '@holdfast/core';
import { type CallContext, sleep, type Grant, type GrantRequest, type LockBackend, type WaitOptions } from '@holdfast/core/backend';
import { ConsulHttp } from './consul-http.js';
import { LOCK_FLAG, MAX_SESSION_TTL_MS, MIN_SESSION_TTL_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import { GrantState, type SessionKind } from './grants.js';
import { inspectKey, lockConflict } from './inspection.js';
import { invalidSessionRefusal, isLockEntry, type KvEntry, lockDelayRefusal, readKey, transact, type TxnKvOp, type TxnResult } from './kv.js';
import { Releaser, releaseExact } from './let-go.js';
import { encodeLockValue } from './lock-value.js';
import type { ResolvedOptions } from './options.js';
import { lockIdOf, provesGrant } from './ownership.js';
import { PrefixWatch } from './prefix-watch.js';
import { SharedSessions, sessionTtlFor, type SessionUser } from './session-pool.js';
import { createSession, destroySession, RenewedSession, renewSession } from './sessions.js';

/** Bounds the "last seen busy" bookkeeping of tryAcquire calls that never wait. */
const MAX_REMEMBERED_BUSY_KEYS = 10_000;
/** Rounds of read-then-acquire when the key keeps changing under us before we call it busy. */
const MAX_ATTEMPT_ROUNDS = 3;

type Attempt = { kind: 'granted'; token: bigint } | { kind: 'busy'; since: bigint } | { kind: 'lock-delay' } | { kind: 'bad-session' };

export class ConsulBackend implements LockBackend {
  readonly name = 'consul';
  readonly capabilities: Capabilities;
  private readonly http: ConsulHttp;
  private readonly shared: SharedSessions;
  private readonly watch: PrefixWatch;
  private readonly releaser: Releaser;
  /** Aborted when close() runs out of time: every background call stops at once. */
  private readonly stopping = new AbortController();
  private readonly grants = new Map<string, GrantState>();
  /** lockIds a call is working on (a lock write on its way, a release under way): not orphans, whatever a snapshot shows. */
  private readonly inHand = new Set<string>();
  /** Key -> index at which a failed attempt saw it busy: the waiter's "newer than" mark. */
  private readonly busySince = new Map<string, bigint>();
  private readonly lockDelayed = new Set<string>();

  constructor(private readonly options: ResolvedOptions) {
    // Every background clean-up waiting to retry listens to it: thousands after a mass loss are normal.
    setMaxListeners(0, this.stopping.signal);
    this.http = new ConsulHttp({ baseUrl: options.address, token: options.token, datacenter: options.datacenter, requestTimeoutMs: options.callTimeoutMs });
    this.shared = new SharedSessions(this.http, options.lockDelayMs, options.callTimeoutMs);
    this.releaser = new Releaser(this.http, options.callTimeoutMs, this.stopping.signal);
    this.watch = new PrefixWatch(this.http, options.prefix, { retries: options.monitorRetries, retryMs: options.monitorRetryMs }, (entries) => this.sweepOrphans(entries));
    this.capabilities = {
      minTtlMs: MIN_SESSION_TTL_MS,
      maxTtlMs: MAX_SESSION_TTL_MS,
      // Maps to a 15 s session TTL, the Go client's default.
      defaultTtlMs: 30_000,
      fencing: 'strict',
      fifo: false,
      wakeUp: 'blocking-query',
      crossProcess: true,
      // Session TTL = max(10 s, ttl/2), invalidated 2 x TTL after the last renewal: at most
      // ttl + 10 s (the 10 s minimum), then the lock-delay keeps the key from new holders.
      expiryGraceMs: MIN_SESSION_TTL_MS * SESSION_TTL_MULTIPLIER - MIN_SESSION_TTL_MS + options.lockDelayMs,
      renewal: 'backend',
    };
  }

  private consulKey(key: string): string {
    return `${this.options.prefix}/${key}`;
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<Grant | null> {
    const consulKey = this.consulKey(request.key);
    const acquiredAt = new Date();
    const value = encodeLockValue({ owner: request.owner, reason: request.reason, acquiredAt: acquiredAt.toISOString(), lockId: request.lockId });
    for (let sessionTries = 0; ; sessionTries++) {
      const session = await this.sessionFor(request, call.signal);
      let attempt: Attempt;
      const lockWrite = { unanswered: false };
      this.inHand.add(request.lockId);
      try {
        attempt = await this.attempt(consulKey, session.id, value, call.signal, lockWrite);
        if (attempt.kind === 'granted') return this.granted(request, consulKey, session, attempt.token, acquiredAt);
      } catch (error) {
        if (lockWrite.unanswered) this.abandon(request, consulKey, session);
        else void session.dispose(AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.callTimeoutMs)]));
        throw error;
      } finally {
        this.inHand.delete(request.lockId);
      }
      await session.dispose(call.signal);
      if (attempt.kind === 'bad-session' && sessionTries === 0) {
        if (session.kind === 'shared') this.shared.discard(session.id);
        continue;
      }
      this.rememberBusy(consulKey, attempt);
      return null;
    }
  }

  /**
   * The Go client's acquire, made atomic: a read decides conflict / busy / free (flags compared
   * exactly), and the acquire runs in a transaction conditioned on what the read saw, so a key is
   * never taken from under a newer state (nor re-entered by our own shared session). The lock op's
   * result carries the key's new ModifyIndex: the fencing token, with no read-after-acquire race.
   */
  private async attempt(consulKey: string, session: string, value: string, signal: AbortSignal, lockWrite: { unanswered: boolean }): Promise<Attempt> {
    const lock = { Verb: 'lock', Key: consulKey, Session: session, Flags: LOCK_FLAG, Value: value } as const;
    const send = async (ops: TxnKvOp[]): Promise<TxnResult> => {
      // Until the answer arrives, the write may have landed (or may still land).
      lockWrite.unanswered = true;
      const answer = await transact(this.http, ops, signal);
      lockWrite.unanswered = false;
      return answer;
    };
    // Released keys are deleted, so a free key is usually absent: one round trip.
    let result: TxnResult = await send([{ Verb: 'check-not-exists', Key: consulKey }, lock]);
    for (let round = 0; ; round++) {
      if (result.ok) return { kind: 'granted', token: tokenOf(result.entries, consulKey) };
      if (lockDelayRefusal(result)) return { kind: 'lock-delay' };
      if (invalidSessionRefusal(result)) return { kind: 'bad-session' };
      const { entry, index } = await readKey(this.http, consulKey, false, signal);
      if (entry && !isLockEntry(entry)) throw lockConflict(consulKey, entry);
      if (entry?.Session) return { kind: 'busy', since: BigInt(entry.ModifyIndex) };
      if (round >= MAX_ATTEMPT_ROUNDS) return { kind: 'busy', since: index };
      const check = entry
        ? ({ Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex } as const)
        : ({ Verb: 'check-not-exists', Key: consulKey } as const);
      result = await send([check, lock]);
    }
  }

  /**
   * An attempt whose lock write was sent but never answered may still land, now or later. Its own
   * session is destroyed; a shared one is retired (destroyed once its last user leaves, so no
   * renewal keeps such a write alive); meanwhile the key is freed if it holds that attempt.
   */
  private abandon(request: GrantRequest, consulKey: string, session: AttemptSession): void {
    if (session.kind === 'shared') this.shared.retire(session.id);
    this.releaser.letGo({ consulKey, session: session.id, token: undefined, lockId: request.lockId }, () =>
      session.dispose(AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.callTimeoutMs)])),
    );
  }

  private rememberBusy(consulKey: string, attempt: Attempt): void {
    if (attempt.kind === 'lock-delay') {
      this.lockDelayed.add(consulKey);
      return;
    }
    if (this.busySince.size >= MAX_REMEMBERED_BUSY_KEYS) this.busySince.clear();
    this.busySince.set(consulKey, attempt.kind === 'busy' ? attempt.since : 0n);
  }

  private granted(request: GrantRequest, consulKey: string, session: AttemptSession, token: bigint, acquiredAt: Date): Grant {
    const grant = new GrantState(request.key, consulKey, request.lockId, session.id, token, session.kind, session.ttlMs, session.renewed, (lost, detail, cause) => {
      request.onLost(detail, cause);
      this.letGoOf(lost);
    });
    this.grants.set(request.lockId, grant);
    if (grant.kind === 'shared') {
      this.shared.attach(grant);
      void session.dispose(this.stopping.signal);
    }
    this.watch.monitor(grant);
    // A lapsing lock's lease is timed by core from the local clock; Consul frees it no sooner.
    return { token, acquiredAt, expiresAt: request.autoRenew ? null : new Date(Date.now() + request.ttlMs) };
  }

  /** A grant declared lost: nobody holds it any more, so it must not stay held on the server either. */
  private letGoOf(grant: GrantState): void {
    this.grants.delete(grant.lockId);
    this.watch.unmonitor(grant);
    void grant.renewed?.stop({ destroy: false });
    this.releaser.letGo(grant, () => this.leaveSession(grant, AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.callTimeoutMs)])));
  }

  private async leaveSession(grant: GrantState, signal: AbortSignal): Promise<void> {
    if (grant.kind === 'shared') this.shared.detach(grant);
    else await destroySession(this.http, grant.session, signal).catch(() => undefined);
  }

  /**
   * A key under our prefix held by one of our shared sessions for no grant of ours (a lock write that
   * landed after its acquire gave up, or a write over our key): let it go.
   */
  private sweepOrphans(entries: readonly KvEntry[]): void {
    // ModifyIndex is unique per write: an entry at a live grant's index is that grant, no need to decode it.
    const granted = new Set<string>();
    for (const grant of this.grants.values()) granted.add(`${grant.token} ${grant.consulKey}`);
    for (const entry of entries) {
      if (!entry.Session || !isLockEntry(entry) || !this.shared.has(entry.Session)) continue;
      if (granted.has(`${entry.ModifyIndex} ${entry.Key}`)) continue;
      const lockId = lockIdOf(entry);
      if (lockId !== undefined && (this.grants.has(lockId) || this.inHand.has(lockId))) continue;
      this.releaser.letGo({ consulKey: entry.Key, session: entry.Session, token: BigInt(entry.ModifyIndex), lockId: lockId ?? `${entry.Key}@${entry.ModifyIndex}` });
    }
  }

  /** The session an attempt uses, and how to give it back when the attempt does not become a grant. */
  private async sessionFor(request: GrantRequest, signal: AbortSignal): Promise<AttemptSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    const lockDelayMs = this.options.lockDelayMs;
    if (request.autoRenew && this.options.sessionMode === 'shared') {
      const session = await this.shared.get(ttlMs, signal);
      // The attempt counts as a user: a retired session is not destroyed under it.
      const user: SessionUser = { session: session.id, onSessionExpired: () => undefined };
      this.shared.attach(user);
      return { id: session.id, kind: 'shared', ttlMs, renewed: undefined, dispose: async () => this.shared.detach(user) };
    }
    const createdAt = Date.now();
    // A lapsing lock's key goes with its session: nothing of a lapsed lock stays behind.
    const id = await createSession(this.http, { ttlMs, lockDelayMs, behavior: request.autoRenew ? 'release' : 'delete' }, signal);
    const destroy = (bound: AbortSignal): Promise<void> => destroySession(this.http, id, bound).catch(() => undefined);
    if (!request.autoRenew) return { id, kind: 'lapsing', ttlMs, renewed: undefined, dispose: destroy };
    const renewed = new RenewedSession(this.http, id, ttlMs, createdAt, this.options.callTimeoutMs, (detail, cause) => {
      this.grants.get(request.lockId)?.onSessionExpired(detail, cause);
    });
    return { id, kind: 'renewed', ttlMs, renewed, dispose: async (bound) => renewed.stop({ destroy: true, signal: bound }) };
  }

  async waitForChange(key: string, options: WaitOptions): Promise<void> {
    const consulKey = this.consulKey(key);
    if (this.lockDelayed.delete(consulKey)) {
      // Consul does not say when a lock-delay ends: retry after a pause, like the Go client.
      await sleep(Math.min(this.options.lockDelayRetryMs, options.timeoutMs), options.signal).catch(() => undefined);
      return;
    }
    const since = this.busySince.get(consulKey) ?? 0n;
    this.busySince.delete(consulKey);
    await this.watch.waitUntilFree(consulKey, since, options);
  }

  async extend(_key: string, lockId: string, ttlMs: number, call: CallContext): Promise<Date | null | undefined> {
    const grant = this.grants.get(lockId);
    if (!grant || grant.lost) return undefined;
    if (grant.kind !== 'lapsing') return (await this.stillOurs(grant, call.signal)) ? null : undefined;
    const sentAt = Date.now();
    const wanted = sessionTtlFor(ttlMs);
    if (wanted !== grant.sessionTtlMs) return (await this.moveToNewSession(grant, wanted, call.signal)) ? new Date(sentAt + ttlMs) : undefined;
    if ((await renewSession(this.http, grant.session, call.signal)) === undefined) return undefined;
    return (await this.stillOurs(grant, call.signal)) ? new Date(sentAt + ttlMs) : undefined;
  }

  /**
   * A Consul session's TTL is fixed at creation: a lapsing lock extended with another TTL moves to
   * a new session in one transaction (checked against the grant's ModifyIndex, then unlock + lock,
   * which sets no lock-delay). The key's ModifyIndex moves on; the handle's token stays valid as
   * nobody else held the key in between.
   */
  private async moveToNewSession(grant: GrantState, sessionTtlMs: number, signal: AbortSignal): Promise<boolean> {
    const id = await createSession(this.http, { ttlMs: sessionTtlMs, lockDelayMs: this.options.lockDelayMs, behavior: 'delete' }, signal);
    const { entry } = await readKey(this.http, grant.consulKey, true, signal).catch(async (error: unknown) => {
      await destroySession(this.http, id, AbortSignal.timeout(this.options.callTimeoutMs)).catch(() => undefined);
      throw error;
    });
    if (!entry || !provesGrant(entry, grant)) {
      await destroySession(this.http, id, signal).catch(() => undefined);
      return false;
    }
    // Not monitored while it moves: a snapshot may show the new session before our answer arrives.
    this.watch.unmonitor(grant);
    const old = grant.session;
    let result: TxnResult;
    try {
      result = await transact(this.http, [
        { Verb: 'check-index', Key: grant.consulKey, Index: entry.ModifyIndex },
        { Verb: 'unlock', Key: grant.consulKey, Session: old, Flags: LOCK_FLAG, Value: entry.Value ?? '' },
        { Verb: 'lock', Key: grant.consulKey, Session: id, Flags: LOCK_FLAG, Value: entry.Value ?? '' },
      ], signal);
    } catch (error) {
      // Unknown outcome: the lock is presumed lost; its key is let go (under whichever session holds it).
      grant.onLost('extend could not confirm the move to a new session', error);
      this.releaser.letGo({ consulKey: grant.consulKey, session: id, token: undefined, lockId: grant.lockId }, () =>
        destroySession(this.http, id, AbortSignal.timeout(this.options.callTimeoutMs)).catch(() => undefined),
      );
      throw error;
    } finally {
      if (!grant.lost) this.watch.monitor(grant);
    }
    if (!result.ok) {
      await destroySession(this.http, id, signal).catch(() => undefined);
      return false;
    }
    grant.session = id;
    grant.sessionTtlMs = sessionTtlMs;
    // Only for the monitor's and release's exact-grant checks; the handle keeps its token.
    grant.token = tokenOf(result.entries, grant.consulKey);
    await destroySession(this.http, old, signal).catch(() => undefined);
    return true;
  }

  private async stillOurs(grant: GrantState, signal: AbortSignal): Promise<boolean> {
    const { entry } = await readKey(this.http, grant.consulKey, true, signal);
    const ours = provesGrant(entry, grant);
    if (!ours) grant.onLost(entry ? 'the key no longer holds this grant' : 'the key was deleted');
    return ours;
  }

  async release(_key: string, lockId: string, call: CallContext): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant) return false;
    this.grants.delete(lockId);
    this.watch.unmonitor(grant);
    void grant.renewed?.stop({ destroy: false });
    let released: boolean;
    this.inHand.add(lockId);
    try {
      // Only this exact grant: the shared session may hold the same key again for a newer one.
      released = await releaseExact(this.http, grant, call.signal);
    } catch (error) {
      // Unconfirmed: keep trying in the background, so the key does not stay held.
      this.releaser.letGo(grant, () => this.leaveSession(grant, AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.options.callTimeoutMs)])));
      throw error;
    } finally {
      this.inHand.delete(lockId);
    }
    // Only after the release: destroying a session that still holds the key would set a lock-delay.
    await this.leaveSession(grant, call.signal);
    return released;
  }

  async isHeld(_key: string, lockId: string, call: CallContext): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant || grant.lost) return false;
    return this.stillOurs(grant, call.signal);
  }

  async inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    const probeSession = async (): Promise<string> => (await this.shared.get(sessionTtlFor(this.capabilities.defaultTtlMs), call.signal)).id;
    return inspectKey(this.http, key, this.consulKey(key), probeSession, call.signal);
  }

  async forceRelease(key: string, call: CallContext): Promise<boolean> {
    const consulKey = this.consulKey(key);
    const { entry } = await readKey(this.http, consulKey, true, call.signal);
    if (!entry) return false;
    if (!isLockEntry(entry)) throw lockConflict(consulKey, entry);
    if (!entry.Session) return false;
    // Releasing with the holder's session (not destroying it) frees only this key, at once (no
    // lock-delay), and fails if the key changed hands since the read.
    const result = await transact(this.http, [
      { Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex },
      { Verb: 'unlock', Key: consulKey, Session: entry.Session },
      { Verb: 'delete', Key: consulKey },
    ], call.signal);
    return result.ok;
  }

  /**
   * Core released every handle before this. Grants left (lost ones being let go, unconfirmed
   * releases) get until `call.signal` aborts; then every socket is destroyed at once.
   */
  async close(call: CallContext): Promise<void> {
    const hardStop = (): void => {
      this.stopping.abort(call.signal.reason);
      this.http.close();
    };
    if (call.signal.aborted) hardStop();
    else call.signal.addEventListener('abort', hardStop, { once: true });
    try {
      this.watch.close();
      const left = [...this.grants.values()];
      this.grants.clear();
      for (const grant of left) this.releaser.letGo(grant, () => this.leaveSession(grant, call.signal));
      await this.releaser.drain(call.signal);
      await this.shared.close(call.signal);
    } finally {
      call.signal.removeEventListener('abort', hardStop);
      this.stopping.abort();
      this.http.close();
    }
  }
}

interface AttemptSession {
  readonly id: string;
  readonly kind: SessionKind;
  readonly ttlMs: number;
  readonly renewed: RenewedSession | undefined;
  /** Gives the session back (destroys an own one); bounded by `signal`. */
  dispose(signal: AbortSignal): Promise<void>;
}

function tokenOf(entries: readonly KvEntry[], consulKey: string): bigint {
  const locked = entries.filter((entry) => entry.Key === consulKey).at(-1);
  if (!locked) throw new Error(`the acquire transaction returned no entry for "${consulKey}"`);
  return BigInt(locked.ModifyIndex);
}
