import { busy, type CallContext, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import { LOCK_FLAG } from './constants.js';
import { ConsulGrant, type GrantContext, type Move, unlessAbandoned } from './grant.js';
import { noSemaphore, semaphoreGuard } from './key-use.js';
import {
  encodeLockValue,
  failedAt,
  invalidSessionRefusal,
  isLockEntry,
  lockConflict,
  lockDelayRefusal,
  modifyIndexOf,
  readKey,
  type TxnKvOp,
  transact,
} from './kv.js';
import { releaseExact, whyNotGrant } from './release.js';
import { type SemaphorePlace, semaphorePlace } from './semaphore-record.js';
import type { GrantSession } from './sessions.js';
import type { SnapshotView } from './watch.js';

/** What a busy answer tells the wait that follows it: the index to block from, or when a lock-delay ends. */
export interface ConsulWake {
  /** The key's index when it was seen held: only a newer read can show it free. */
  readonly index: bigint;
  /** Consul does not say when a lock-delay ends: retry at this time (epoch ms), like the Go client. */
  readonly lockDelayUntil?: number;
  /** A semaphore's slots were full: wait on its directory, not on the lock key. */
  readonly slots?: true;
}

export interface AcquireSettings {
  readonly prefix: string;
  readonly lockDelayRetryMs: number;
}

/** Rounds of read-then-acquire when the key keeps changing under us before we call it busy. */
const MAX_ATTEMPT_ROUNDS = 3;

type Answer = { kind: 'granted'; token: bigint } | { kind: 'busy'; since: bigint } | { kind: 'lock-delay' } | { kind: 'bad-session' };

/**
 * One acquire attempt: the Go client's Lock() (api/lock.go), made atomic and without its waiting,
 * which is core's (the waits use the busy answer's ConsulWake).
 *
 * 1. Take a session: the provider's shared one, the lock's own, or a lapsing one (sessions.ts).
 * 2. Lock `<prefix>/<key>` in a transaction `[check-not-exists, guard, lock]`: released keys are
 *    deleted, so a free key is usually absent and this is the only round trip. The guard keeps the key
 *    from being a lock while it is a semaphore with holders (key-use.ts).
 * 3. Refused: read the key. Other flags: LockConflictError (Go's ErrLockConflict). Held by a session:
 *    busy. Free: lock it again, conditioned on the ModifyIndex just read, so that a key is never taken
 *    from under a newer state, nor re-entered by the provider's own shared session. Refused by the
 *    guard: read the semaphore (a conflict while it has live holders) and guard on what was seen.
 * 4. Refused because of a lock-delay: busy until the retry time. Refused because the session is gone:
 *    once more with a fresh session.
 * 5. Granted: the lock operation's result carries the key's new ModifyIndex, the fencing token.
 */
export async function tryGrant(
  context: GrantContext,
  settings: AcquireSettings,
  request: GrantRequest,
  call: CallContext,
  /** Written in the same transaction as the lock, and only with it (a queued waiter's entry deleted as it is granted). */
  alongside: readonly TxnKvOp[] = [],
  /** false: a key found taken is busy without the read that says by whom and since when (the wait that follows reads it anyway). */
  readIfTaken = true,
): Promise<GrantOutcome<ConsulWake>> {
  const consulKey = `${settings.prefix}/${request.key}`;
  const acquiredAt = new Date();
  const value = encodeLockValue({
    owner: request.owner,
    reason: request.reason,
    acquiredAt: acquiredAt.toISOString(),
    lockId: request.lockId,
  });
  for (let sessionTries = 0; ; sessionTries++) {
    const session = await context.sessions.forLock(request, call.signal);
    const lockWrite = { unanswered: false };
    let answer: Answer;
    try {
      const place = semaphorePlace(settings.prefix, request.key);
      answer = await attempt(context, place, session, value, call.signal, lockWrite, alongside, readIfTaken);
    } catch (error) {
      // A lock write sent but never answered may land now or later: its session must not keep it alive.
      if (lockWrite.unanswered) session.disown();
      else void session.leave();
      throw error;
    }
    if (answer.kind === 'granted') return granted(grantOf(context, request, consulKey, session, answer.token, acquiredAt, call));
    await session.leave(call.signal);
    if (answer.kind === 'bad-session' && sessionTries === 0) {
      session.discard();
      continue;
    }
    if (answer.kind === 'lock-delay') return busy({ index: 0n, lockDelayUntil: Date.now() + settings.lockDelayRetryMs });
    return busy({ index: answer.kind === 'busy' ? answer.since : 0n });
  }
}

async function attempt(
  context: GrantContext,
  place: SemaphorePlace,
  session: GrantSession,
  value: string,
  signal: AbortSignal,
  lockWrite: { unanswered: boolean },
  alongside: readonly TxnKvOp[],
  readIfTaken: boolean,
): Promise<Answer> {
  const consulKey = place.lockKey;
  const lock = { Verb: 'lock', Key: consulKey, Session: session.id, Flags: LOCK_FLAG, Value: value } as const;
  let check: TxnKvOp = { Verb: 'check-not-exists', Key: consulKey };
  let guard = noSemaphore(place);
  for (let round = 0; ; round++) {
    // Until the answer arrives, the write may have landed (or may still land).
    lockWrite.unanswered = true;
    const result = await transact(context.http, [check, ...guard, lock, ...alongside], signal);
    lockWrite.unanswered = false;
    if (result.ok) return { kind: 'granted', token: modifyIndexOf(result.entries, consulKey) };
    if (lockDelayRefusal(result)) return { kind: 'lock-delay' };
    if (invalidSessionRefusal(result)) return { kind: 'bad-session' };
    const guardFailed = failedAt(result, 1, guard.length);
    const keyFailed = failedAt(result, 0) || failedAt(result, 1 + guard.length);
    if (guardFailed) guard = await semaphoreGuard(context.http, place, signal);
    if (!keyFailed) {
      if (round >= MAX_ATTEMPT_ROUNDS) return { kind: 'busy', since: 0n };
      continue;
    }
    if (!readIfTaken) return { kind: 'busy', since: 0n };
    const { entry, index } = await readKey(context.http, consulKey, false, signal);
    if (entry && !isLockEntry(entry)) throw lockConflict(place.key, entry);
    if (entry?.Session) return { kind: 'busy', since: BigInt(entry.ModifyIndex) };
    if (round >= MAX_ATTEMPT_ROUNDS) return { kind: 'busy', since: index };
    check = entry ? { Verb: 'check-index', Key: consulKey, Index: entry.ModifyIndex } : { Verb: 'check-not-exists', Key: consulKey };
  }
}

function grantOf(
  context: GrantContext,
  request: GrantRequest,
  consulKey: string,
  session: GrantSession,
  token: bigint,
  acquiredAt: Date,
  call: CallContext,
): LockGrant {
  // A lapsing lock's lease is timed by core from the local clock; Consul frees it no sooner.
  const expiresAt = request.autoRenew ? null : new Date(Date.now() + request.ttlMs);
  const grant = new LockGrant(context, consulKey, request.lockId, session, token, acquiredAt, expiresAt, request.onLost);
  return unlessAbandoned(grant, context, call);
}

/**
 * One lock this provider holds on `<prefix>/<key>`: the session that holds it and the ModifyIndex of
 * its write (the fencing token, which is also how a release tells this grant from a later one of the
 * same session).
 */
export class LockGrant extends ConsulGrant {
  constructor(
    context: GrantContext,
    readonly consulKey: string,
    readonly lockId: string,
    session: GrantSession,
    token: bigint,
    acquiredAt: Date,
    expiresAt: Date | null,
    reportLost: (detail: string, cause?: unknown) => void,
  ) {
    super(context, session, token, acquiredAt, expiresAt, reportLost, token);
    this.watch();
  }

  get watchKey(): string {
    return this.consulKey;
  }

  lossIn(view: SnapshotView): string | undefined {
    return whyNotGrant(view.entry(this.consulKey), this);
  }

  protected async check(signal: AbortSignal): Promise<string | undefined> {
    const { entry } = await readKey(this.context.http, this.consulKey, true, signal);
    return whyNotGrant(entry, this);
  }

  protected free(signal: AbortSignal): Promise<boolean> {
    return releaseExact(this.context.http, this, signal);
  }

  /** `check-index` + `unlock` + `lock` in one transaction: sets no lock-delay, and nobody can take the key in between. */
  protected async planMove(next: GrantSession, signal: AbortSignal): Promise<Move | string> {
    const { entry } = await readKey(this.context.http, this.consulKey, true, signal);
    const loss = whyNotGrant(entry, this);
    if (loss !== undefined || !entry) return loss ?? 'the key was deleted';
    const value = entry.Value ?? '';
    return {
      ops: [
        { Verb: 'check-index', Key: this.consulKey, Index: entry.ModifyIndex },
        { Verb: 'unlock', Key: this.consulKey, Session: this.session.id, Flags: LOCK_FLAG, Value: value },
        { Verb: 'lock', Key: this.consulKey, Session: next.id, Flags: LOCK_FLAG, Value: value },
      ],
      indexKey: this.consulKey,
    };
  }
}
