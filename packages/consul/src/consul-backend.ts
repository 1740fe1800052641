import { LockConflictError, type Capabilities, type LockInfo } from '@holdfast/core';
import { sleep, type Grant, type GrantRequest, type LockBackend, type WaitOptions } from '@holdfast/core/backend';
import { ConsulHttp } from './consul-http.js';
import { LOCK_FLAG, MAX_SESSION_TTL_MS, MIN_SESSION_TTL_MS, SESSION_TTL_MULTIPLIER } from './constants.js';
import { GrantState, type SessionKind } from './grants.js';
import { decodeValue, invalidSessionRefusal, isLockEntry, type KvEntry, lockDelayRefusal, readKey, transact, type TxnResult } from './kv.js';
import { decodeLockValue, encodeLockValue } from './lock-value.js';
import type { ResolvedOptions } from './options.js';
import { PrefixWatch } from './prefix-watch.js';
import { SharedSessions, sessionTtlFor } from './session-pool.js';
import { createSession, destroySession, RenewedSession, renewSession, sessionInfo } from './sessions.js';

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
  private readonly grants = new Map<string, GrantState>();
  /** Key -> index at which a failed attempt saw it busy: the waiter's "newer than" mark. */
  private readonly busySince = new Map<string, bigint>();
  private readonly lockDelayed = new Set<string>();

  constructor(private readonly options: ResolvedOptions) {
    this.http = new ConsulHttp({ baseUrl: options.address, token: options.token, datacenter: options.datacenter });
    this.shared = new SharedSessions(this.http, options.lockDelayMs);
    this.watch = new PrefixWatch(this.http, options.prefix, { retries: options.monitorRetries, retryMs: options.monitorRetryMs });
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

  async tryGrant(request: GrantRequest): Promise<Grant | null> {
    const consulKey = this.consulKey(request.key);
    const acquiredAt = new Date();
    const value = encodeLockValue({ owner: request.owner, reason: request.reason, acquiredAt: acquiredAt.toISOString(), lockId: request.lockId });
    for (let sessionTries = 0; ; sessionTries++) {
      const session = await this.sessionFor(request);
      let attempt: Attempt;
      try {
        attempt = await this.attempt(consulKey, session.id, value);
      } catch (error) {
        await session.dispose();
        throw error;
      }
      if (attempt.kind === 'granted') return this.granted(request, consulKey, session, attempt.token, acquiredAt);
      await session.dispose();
      if (attempt.kind === 'bad-session' && sessionTries === 0) {
        this.shared.discard(session.id);
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
  private async attempt(consulKey: string, session: string, value: string): Promise<Attempt> {
    const lock = { Verb: 'lock', Key: consulKey, Session: session, Flags: LOCK_FLAG, Value: value } as const;
    // Released keys are deleted, so a free key is usually absent: one round trip.
    let result: TxnResult = await transact(this.http, [{ Verb: 'check-not-exists', Key: consulKey }, lock]);
    for (let round = 0; ; round++) {
      if (result.ok) return { kind: 'granted', token: tokenOf(result.entries, consulKey) };
      if (lockDelayRefusal(result)) return { kind: 'lock-delay' };
      if (invalidSessionRefusal(result)) return { kind: 'bad-session' };
      const { entry, index } = await readKey(this.http, consulKey);
      if (entry && !isLockEntry(entry)) throw conflict(consulKey, entry);
      if (entry?.Session) return { kind: 'busy', since: BigInt(entry.ModifyIndex) };
      if (round >= MAX_ATTEMPT_ROUNDS) return { kind: 'busy', since: index };
      const check = entry
        ? ({ Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex } as const)
        : ({ Verb: 'check-not-exists', Key: consulKey } as const);
      result = await transact(this.http, [check, lock]);
    }
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
    const grant = new GrantState(request.key, consulKey, request.lockId, session.id, token, session.kind, session.ttlMs, session.renewed, request.onLost);
    this.grants.set(request.lockId, grant);
    if (grant.kind === 'shared') this.shared.attach(grant);
    this.watch.monitor(grant);
    // A lapsing lock's lease is timed by core from the local clock; Consul frees it no sooner.
    return { token, acquiredAt, expiresAt: request.autoRenew ? null : new Date(Date.now() + request.ttlMs) };
  }

  /** The session an attempt uses, and how to give it back when the attempt does not become a grant. */
  private async sessionFor(request: GrantRequest): Promise<AttemptSession> {
    const ttlMs = sessionTtlFor(request.ttlMs);
    const lockDelayMs = this.options.lockDelayMs;
    if (request.autoRenew && this.options.sessionMode === 'shared') {
      const session = await this.shared.get(ttlMs);
      return { id: session.id, kind: 'shared', ttlMs, renewed: undefined, dispose: async () => {} };
    }
    const createdAt = Date.now();
    const id = await createSession(this.http, { ttlMs, lockDelayMs });
    if (!request.autoRenew) {
      return { id, kind: 'lapsing', ttlMs, renewed: undefined, dispose: () => destroySession(this.http, id).catch(() => undefined) };
    }
    const renewed = new RenewedSession(this.http, id, ttlMs, createdAt, (detail, cause) => {
      this.grants.get(request.lockId)?.onSessionExpired(detail, cause);
    });
    return { id, kind: 'renewed', ttlMs, renewed, dispose: () => renewed.stop({ destroy: true }) };
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

  async extend(_key: string, lockId: string, ttlMs: number): Promise<Date | null | undefined> {
    const grant = this.grants.get(lockId);
    if (!grant || grant.lost) return undefined;
    if (grant.kind !== 'lapsing') return (await this.stillOurs(grant)) ? null : undefined;
    const sentAt = Date.now();
    const wanted = sessionTtlFor(ttlMs);
    if (wanted !== grant.sessionTtlMs) return (await this.moveToNewSession(grant, wanted)) ? new Date(sentAt + ttlMs) : undefined;
    if ((await renewSession(this.http, grant.session)) === undefined) return undefined;
    return (await this.stillOurs(grant)) ? new Date(sentAt + ttlMs) : undefined;
  }

  /**
   * A Consul session's TTL is fixed at creation: a lapsing lock extended with another TTL moves to
   * a new session in one transaction (unlock + lock, which sets no lock-delay). The key's
   * ModifyIndex moves on; the handle's token stays valid as nobody else held the key in between.
   */
  private async moveToNewSession(grant: GrantState, sessionTtlMs: number): Promise<boolean> {
    const id = await createSession(this.http, { ttlMs: sessionTtlMs, lockDelayMs: this.options.lockDelayMs });
    const { entry } = await readKey(this.http, grant.consulKey, true);
    if (!entry || entry.Session !== grant.session) {
      await destroySession(this.http, id).catch(() => undefined);
      return false;
    }
    // Not monitored while it moves: a snapshot may show the new session before our answer arrives.
    this.watch.unmonitor(grant);
    const old = grant.session;
    let result: TxnResult;
    try {
      result = await transact(this.http, [
        { Verb: 'unlock', Key: grant.consulKey, Session: old, Flags: LOCK_FLAG, Value: entry.Value ?? '' },
        { Verb: 'lock', Key: grant.consulKey, Session: id, Flags: LOCK_FLAG, Value: entry.Value ?? '' },
      ]);
    } finally {
      if (!grant.lost) this.watch.monitor(grant);
    }
    if (!result.ok) {
      await destroySession(this.http, id).catch(() => undefined);
      return false;
    }
    grant.session = id;
    grant.sessionTtlMs = sessionTtlMs;
    // Only for the monitor's "snapshot older than the grant" test; the handle keeps its token.
    grant.token = tokenOf(result.entries, grant.consulKey);
    await destroySession(this.http, old).catch(() => undefined);
    return true;
  }

  private async stillOurs(grant: GrantState): Promise<boolean> {
    const { entry } = await readKey(this.http, grant.consulKey, true);
    const ours = entry !== null && isLockEntry(entry) && entry.Session === grant.session;
    if (!ours) grant.onLost(entry ? 'the key is no longer held by our session' : 'the key was deleted');
    return ours;
  }

  async release(_key: string, lockId: string): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant) return false;
    this.grants.delete(lockId);
    this.watch.unmonitor(grant);
    if (grant.kind === 'shared') this.shared.detach(grant);
    else void grant.renewed?.stop({ destroy: false });
    try {
      // Release, then delete the now-free key, atomically: never frees another holder, leaves no
      // garbage keys, and a `consul lock` waiter treats a missing key as free.
      const result = await transact(this.http, [
        { Verb: 'unlock', Key: grant.consulKey, Session: grant.session },
        { Verb: 'delete', Key: grant.consulKey },
      ]);
      return result.ok;
    } finally {
      // Only after the release: destroying a session that still holds the key would set a lock-delay.
      if (grant.ownsSession) await destroySession(this.http, grant.session).catch(() => undefined);
    }
  }

  async isHeld(_key: string, lockId: string): Promise<boolean> {
    const grant = this.grants.get(lockId);
    if (!grant || grant.lost) return false;
    return this.stillOurs(grant);
  }

  async inspect(key: string): Promise<LockInfo | null> {
    const consulKey = this.consulKey(key);
    const { entry } = await readKey(this.http, consulKey, true);
    if (!entry) return null;
    if (!isLockEntry(entry)) throw conflict(consulKey, entry);
    if (!entry.Session) return (await this.lockDelayInForce(consulKey)) ? this.delayedInfo(key, consulKey, entry) : null;
    const session = await sessionInfo(this.http, entry.Session);
    const raw = decodeValue(entry);
    const value = decodeLockValue(raw);
    return {
      key,
      owner: value?.owner ?? (session ? `${session.Name}@${session.Node}` : `session ${entry.Session}`),
      reason: value?.reason,
      // A foreign holder (e.g. `consul lock`) records no time: report "now" and say so in details.
      acquiredAt: value ? new Date(value.acquiredAt) : new Date(),
      expiresAt: null,
      token: BigInt(entry.ModifyIndex),
      details: {
        consulKey,
        session: entry.Session,
        sessionName: session?.Name ?? null,
        node: session?.Node ?? null,
        sessionTtl: session?.TTL ?? null,
        lockDelayMs: session ? Math.round(session.LockDelay / 1e6) : null,
        lockIndex: entry.LockIndex,
        modifyIndex: entry.ModifyIndex,
        lockDelay: false,
        holdfast: value !== null,
        ...(value ? { lockId: value.lockId } : { value: raw, acquiredAtKnown: false }),
      },
    };
  }

  /**
   * Consul does not publish lock-delays. Probe without side effects: a transaction that would lock
   * the key and then fails a check on purpose is rolled back, and Consul reports a lock-delay first.
   */
  private async lockDelayInForce(consulKey: string): Promise<boolean> {
    const session = await this.shared.get(sessionTtlFor(this.capabilities.defaultTtlMs));
    const result = await transact(this.http, [
      { Verb: 'lock', Key: consulKey, Session: session.id, Flags: LOCK_FLAG },
      { Verb: 'check-index', Key: consulKey, Index: 0 },
    ]);
    return lockDelayRefusal(result);
  }

  /** A free key that nobody may take yet: its previous holder's session was invalidated. */
  private delayedInfo(key: string, consulKey: string, entry: KvEntry): LockInfo {
    const value = decodeLockValue(decodeValue(entry));
    return {
      key,
      owner: value?.owner ?? '(lock-delay after an invalidated session)',
      reason: value?.reason,
      acquiredAt: value ? new Date(value.acquiredAt) : new Date(),
      expiresAt: null,
      token: BigInt(entry.ModifyIndex),
      details: { consulKey, session: null, lockDelay: true, lockIndex: entry.LockIndex, modifyIndex: entry.ModifyIndex, holdfast: value !== null },
    };
  }

  async forceRelease(key: string): Promise<boolean> {
    const consulKey = this.consulKey(key);
    const { entry } = await readKey(this.http, consulKey, true);
    if (!entry) return false;
    if (!isLockEntry(entry)) throw conflict(consulKey, entry);
    if (!entry.Session) return false;
    // Releasing with the holder's session (not destroying it) frees only this key, at once (no
    // lock-delay), and fails if the key changed hands since the read.
    const result = await transact(this.http, [
      { Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex },
      { Verb: 'unlock', Key: consulKey, Session: entry.Session },
      { Verb: 'delete', Key: consulKey },
    ]);
    return result.ok;
  }

  async close(): Promise<void> {
    this.watch.close();
    const owned = [...this.grants.values()].filter((grant) => grant.ownsSession);
    this.grants.clear();
    await Promise.all([
      this.shared.close(),
      ...owned.map(async (grant) => {
        await grant.renewed?.stop({ destroy: false });
        await destroySession(this.http, grant.session).catch(() => undefined);
      }),
    ]);
    this.http.close();
  }
}

interface AttemptSession {
  readonly id: string;
  readonly kind: SessionKind;
  readonly ttlMs: number;
  readonly renewed: RenewedSession | undefined;
  dispose(): Promise<void>;
}

function tokenOf(entries: readonly KvEntry[], consulKey: string): bigint {
  const locked = entries.filter((entry) => entry.Key === consulKey).at(-1);
  if (!locked) throw new Error(`the acquire transaction returned no entry for "${consulKey}"`);
  return BigInt(locked.ModifyIndex);
}

function conflict(consulKey: string, entry: KvEntry): LockConflictError {
  return new LockConflictError(consulKey, `existing key does not match lock use (flags ${entry.Flags}, lock flag ${LOCK_FLAG})`);
}
