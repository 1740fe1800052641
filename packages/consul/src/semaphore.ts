import { BackendError, LockConflictError } from '@holdfast/core';
import {
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockMode,
  type SlotRequest,
} from '@holdfast/core/backend';
import { ConsulGrant, type GrantContext, type Move, unlessAbandoned } from './grant.js';
import { lockGuard, noLock } from './key-use.js';
import {
  decodeLockValue,
  decodeValue,
  encodeLockValue,
  failedAt,
  invalidSessionRefusal,
  lockDelayRefusal,
  modifyIndexOf,
  type TxnKvOp,
  transact,
} from './kv.js';
import type { AcquireSettings, ConsulWake } from './lock.js';
import {
  contenderKey,
  encodeRecord,
  encodeStateRecord,
  leaveSemaphore,
  readSemaphore,
  roomIn,
  type SemaphorePlace,
  type SemaphoreState,
  semaphorePlace,
  semaphoreState,
  whyNotHolder,
} from './semaphore-record.js';
import type { GrantSession } from './sessions.js';
import type { SnapshotView } from './watch.js';

/** Check-and-set rounds lost to other contenders (each one means another made progress) before the attempt is called busy. */
const MAX_CLAIM_ROUNDS = 5;

interface Seen {
  readonly state: SemaphoreState;
  /** X-Consul-Index of the directory read: where a wait for a free slot blocks from. */
  readonly index: bigint;
}

/**
 * One attempt at a slot: Go's Semaphore.Acquire (api/semaphore.go), without its waiting, which is core's
 * (the waits block on the semaphore's directory from the busy answer's index).
 *
 * 1. Read the directory `<prefix>/<key>/`: the coordination record and the contender entries. Other
 *    flags on the record, or another limit while slots are held: LockConflictError (Go refuses a
 *    limit mismatch too). Holders whose session holds no entry there are dead and pruned. No free
 *    slot: busy, and no session was made for nothing.
 * 2. Take the slot's own session (behaviour delete; renewed unless autoRenew is false): a spare
 *    left by an attempt of this provider that lost its race (sessions.ts), or a new one.
 * 3. One transaction: acquire the contender entry `<dir>/<session>` with that session, guard against
 *    a plain lock of the key (key-use.ts), and check-and-set the record with this session among the
 *    live holders. All writes of a transaction get its Raft index: the record's new ModifyIndex is the
 *    fencing token, strictly increasing across the key's slots since every grant writes the record,
 *    and it is also the contender entry's ModifyIndex, where holders() reads it back.
 * 4. Refused: the record changed (another contender) → read again; the guard failed → rebuild it, or
 *    a conflict; a lock-delay on the lock key → busy until the retry time; the session unknown →
 *    once more with a new one. Busy after all: the session, which holds nothing, becomes a spare.
 */
export function tryGrantSlot(
  context: GrantContext,
  settings: AcquireSettings,
  request: SlotRequest,
  call: CallContext,
): Promise<GrantOutcome<ConsulWake>> {
  const place = semaphorePlace(settings.prefix, request.key);
  return claimPlace(context, settings, request, call, { place, limit: request.limit, admits: (state) => roomIn(state) > 0 });
}

/** What one claim of a coordination record asks for: a slot of a semaphore, or a read-write grant (read-write.ts). */
export interface Claim {
  readonly place: SemaphorePlace;
  readonly limit: number;
  /** Whether this state lets the claim in. */
  readonly admits: (state: SemaphoreState) => boolean;
  /** A read-write grant's mode, written beside its session in the record. */
  readonly mode?: LockMode;
}

/** The attempt described above, for a slot or a read-write grant. */
export async function claimPlace(
  context: GrantContext,
  settings: AcquireSettings,
  request: GrantRequest,
  call: CallContext,
  claim: Claim,
): Promise<GrantOutcome<ConsulWake>> {
  const { place, limit } = claim;
  let seen = await readForClaim(context, place, limit, call.signal);
  if (!claim.admits(seen.state)) return busy({ index: seen.index, slots: true });
  let session = await context.sessions.forSlot(request, call.signal);
  let freshSession = false;
  const acquiredAt = new Date();
  const { owner, reason, lockId } = request;
  const value = encodeLockValue({ owner, reason, acquiredAt: acquiredAt.toISOString(), lockId });
  let guard = noLock(place);
  let unanswered = false;
  try {
    for (let round = 0; ; round++) {
      const ops = claimOps(claim, session.id, value, seen.state, guard);
      // Until the answer arrives, the claim may have landed (or may still land).
      unanswered = true;
      const result = await transact(context.http, ops, call.signal);
      unanswered = false;
      if (result.ok) {
        const token = modifyIndexOf(result.entries, place.coordinationKey);
        const expiresAt = request.autoRenew ? null : new Date(Date.now() + request.ttlMs);
        return granted(
          unlessAbandoned(new SlotGrant(context, place, session, token, acquiredAt, expiresAt, request.onLost), context, call),
        );
      }
      if (lockDelayRefusal(result)) {
        context.sessions.spare(session);
        return busy({ index: 0n, lockDelayUntil: Date.now() + settings.lockDelayRetryMs, slots: true });
      }
      if (invalidSessionRefusal(result)) {
        if (freshSession) throw new BackendError('consul', `the slot's new session ${session.id} was invalidated before its first use`);
        // A spare Consul no longer knows (its node failed): once more, with a session made for this attempt.
        void session.leave();
        session = await context.sessions.forSlot(request, call.signal, true);
        freshSession = true;
        guard = noLock(place);
        continue;
      }
      if (failedAt(result, 1, guard.length)) guard = await lockGuard(context.http, place, session.id, call.signal);
      if (failedAt(result, ops.length - 1)) seen = await readForClaim(context, place, limit, call.signal);
      if (!claim.admits(seen.state) || round >= MAX_CLAIM_ROUNDS) {
        context.sessions.spare(session);
        return busy({ index: seen.index, slots: true });
      }
    }
  } catch (error) {
    // An own session: destroying it takes a claim that lands late along (behaviour delete), a dead holder others prune.
    if (unanswered) session.disown();
    else void session.leave();
    throw error;
  }
}

async function readForClaim(context: GrantContext, place: SemaphorePlace, limit: number, signal: AbortSignal): Promise<Seen> {
  const { index, ...state } = await readSemaphore(context.http, place, signal, false);
  if (state.problem !== undefined) throw new LockConflictError(place.key, state.problem);
  if (state.limit !== undefined && state.limit !== limit && state.holders.length > 0) {
    throw new LockConflictError(place.key, `semaphore limit conflict (in use with limit ${state.limit}, asked for ${limit})`);
  }
  return { state, index };
}

/** [contender entry, ...guard, record]: a record with another limit but no live holder is taken over with ours. */
function claimOps(claim: Claim, session: string, value: string, state: SemaphoreState, guard: readonly TxnKvOp[]): TxnKvOp[] {
  const { place, limit, mode } = claim;
  const modes = mode === undefined ? undefined : new Map(state.modes).set(session, mode);
  const record = encodeRecord(limit, [...state.holders, session], modes);
  return [
    { Verb: 'lock', Key: contenderKey(place.dir, session), Session: session, Flags: place.flag, Value: value },
    ...guard,
    // Index 0: only if there is no record yet.
    { Verb: 'cas', Key: place.coordinationKey, Index: state.entry?.ModifyIndex ?? 0, Flags: place.flag, Value: record },
  ];
}

/**
 * One slot of a semaphore this provider holds: its own session, named among the coordination
 * record's holders and holding its contender entry `<dir>/<session>`. Held while both are true, as
 * Go's monitorLock decides; watched on the semaphore's directory.
 */
export class SlotGrant extends ConsulGrant {
  constructor(
    context: GrantContext,
    private readonly place: SemaphorePlace,
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
    return this.place.dir;
  }

  lossIn(view: SnapshotView): string | undefined {
    return whyNotHolder(semaphoreState(this.place.dir, view.under(this.place.dir), this.place.flag), this.session.id);
  }

  protected async check(signal: AbortSignal): Promise<string | undefined> {
    return whyNotHolder(await this.read(signal), this.session.id);
  }

  protected free(signal: AbortSignal): Promise<boolean> {
    return leaveSemaphore(this.context.http, this.place, this.session.id, signal);
  }

  /**
   * Holders are named by session, so the slot moves whole: the new session's contender entry (carrying
   * the token, which its new ModifyIndex no longer shows), the record with the new session in place of
   * the old by check-and-set, and the old contender entry deleted, in one transaction.
   */
  protected async planMove(next: GrantSession, signal: AbortSignal): Promise<Move | string> {
    const state = await this.read(signal);
    const loss = whyNotHolder(state, this.session.id);
    if (loss !== undefined) return loss;
    const contender = state.bySession.get(this.session.id)!;
    const value = decodeLockValue(decodeValue(contender));
    const moved = value ? encodeLockValue({ ...value, token: this.token.toString() }) : (contender.Value ?? '');
    const holders = state.holders.map((holder) => (holder === this.session.id ? next.id : holder));
    const modes = new Map(state.modes).set(next.id, state.modes.get(this.session.id) ?? 'exclusive');
    return {
      ops: [
        { Verb: 'lock', Key: contenderKey(this.place.dir, next.id), Session: next.id, Flags: this.place.flag, Value: moved },
        {
          Verb: 'cas',
          Key: this.place.coordinationKey,
          Index: state.entry!.ModifyIndex,
          Flags: this.place.flag,
          Value: encodeStateRecord(this.place, { ...state, modes }, holders),
        },
        { Verb: 'delete', Key: contender.Key },
      ],
      indexKey: this.place.coordinationKey,
    };
  }

  private read(signal: AbortSignal): Promise<SemaphoreState> {
    return readSemaphore(this.context.http, this.place, signal);
  }
}
