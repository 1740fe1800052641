import { AcquireStop } from './acquire-stop.js';
import { type Attempt, leaseStartOf, newAttempt } from './attempt.js';
import type { BackendGrant, LockBackend, LockMode } from './backend.js';
import type { BackgroundWork } from './background-work.js';
import { type AcquireOutcome, CHANNELS, type LockEvent, publish } from './diagnostics.js';
import { LockAbortedError, LockTimeoutError, ProviderClosedError } from './errors.js';
import type { GrantTaker } from './grant-taker.js';
import { HeldLock, type HeldLockContext } from './held-lock.js';
import type { AcquireOptions, Lock } from './types.js';
import { type TtlPolicy, type ValidatedAcquire, validateAcquireOptions, validateKey } from './validation.js';

/** What a provider lends its lock taker. */
export interface LockTakerContext {
  readonly backend: LockBackend;
  readonly owner: string;
  readonly ttlPolicy: TtlPolicy;
  readonly grants: GrantTaker;
  readonly background: BackgroundWork;
  /** Aborted as the provider's close() begins. */
  readonly closing: AbortSignal;
  readonly lockContext: HeldLockContext;
  /** The provider's held locks (held(), close()). */
  readonly handles: Set<HeldLock>;
  readonly isClosed: () => boolean;
  readonly assertOpen: () => void;
}

/**
 * From a user's acquire to a held lock: validation, the grant (one attempt, or core's wait), and
 * the handle that renews and watches it; for plain locks and semaphore slots alike.
 */
export class LockTaker {
  constructor(private readonly context: LockTakerContext) {}

  /** One attempt at the key (limit and mode undefined), at one of its semaphore slots, or at a read-write grant of it. */
  async tryTake(key: string, options: AcquireOptions | undefined, limit: number | undefined, mode?: LockMode): Promise<Lock | null> {
    const validated = this.validated(key, options);
    const attempt = newAttempt(key, this.context.owner, validated, limit, 0, mode);
    publish(CHANNELS.acquire, () => this.event(attempt, { waitMs: 0 }));
    let grant: BackendGrant | null;
    try {
      grant = await this.context.grants.attemptGrant(attempt, validated.signal, undefined);
    } catch (error) {
      await this.context.grants.giveUp(attempt, undefined, validated.signal?.aborted === true);
      const failure = validated.signal?.aborted ? new LockAbortedError(key, validated.signal.reason) : error;
      this.ended(attempt, failure);
      throw failure;
    }
    if (grant) return this.adopt(attempt, grant);
    publish(CHANNELS.acquireEnd, () => this.endEvent(attempt, 'busy', {}));
    return null;
  }

  async take(key: string, options: AcquireOptions | undefined, limit: number | undefined, mode?: LockMode): Promise<Lock> {
    const validated = this.validated(key, options);
    const stop = new AcquireStop(validated.signal, this.context.closing);
    const attempt = newAttempt(key, this.context.owner, validated, limit, validated.waitMs, mode);
    let grant: BackendGrant;
    try {
      publish(CHANNELS.acquire, () => this.event(attempt, { waitMs: validated.waitMs }));
      grant = await this.context.grants.waitForGrant(attempt, validated.waitMs, stop, validated.waitForBackend);
    } catch (error) {
      // Whatever the backend was doing when the caller or close() cancelled, the cancellation is the answer.
      let failure = error;
      if (this.context.closing.aborted) failure = new ProviderClosedError(this.context.backend.name);
      else if (stop.aborted) failure = new LockAbortedError(key, stop.reason);
      this.ended(attempt, failure);
      throw failure;
    } finally {
      stop.dispose();
    }
    return this.adopt(attempt, grant);
  }

  /** Bad input and an open provider are checked before the backend is touched; so is a signal aborted already. */
  private validated(key: string, options: AcquireOptions | undefined): ValidatedAcquire {
    this.context.assertOpen();
    validateKey(key);
    const validated = validateAcquireOptions(options, this.context.backend.capabilities, this.context.ttlPolicy);
    if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
    return validated;
  }

  /** Synchronous when the provider is open, so that a grant costs no extra promise on its way to the caller. */
  private adopt(attempt: Attempt, grant: BackendGrant): Lock | Promise<never> {
    if (this.context.isClosed()) return this.refuseAfterClose(attempt, grant);
    const handle = new HeldLock(this.context.lockContext, attempt.request, grant, leaseStartOf(attempt));
    this.context.handles.add(handle);
    attempt.handle = handle;
    const fields = (): Record<string, unknown> => ({ token: handle.token, lockId: handle.lockId, expiresAt: handle.expiresAt });
    publish(CHANNELS.grant, () => this.event(attempt, { ...fields(), waitedMs: Date.now() - attempt.startedAt }));
    publish(CHANNELS.acquireEnd, () => this.endEvent(attempt, 'granted', fields()));
    if (attempt.pendingLoss) handle.markLost(attempt.pendingLoss.detail, attempt.pendingLoss.cause);
    return handle;
  }

  private async refuseAfterClose(attempt: Attempt, grant: BackendGrant): Promise<never> {
    await this.context.background.releaseQuietly(grant);
    const closed = new ProviderClosedError(this.context.backend.name);
    this.ended(attempt, closed);
    throw closed;
  }

  /** `holdfast:acquire-end` for an acquire that ended without a lock. */
  private ended(attempt: Attempt, error: unknown): void {
    publish(CHANNELS.acquireEnd, () => this.endEvent(attempt, outcomeOf(error), { error }));
  }

  private event(attempt: Attempt, fields: Record<string, unknown>): LockEvent {
    const { backend, owner } = this.context;
    return { backend: backend.name, owner, key: attempt.request.key, acquireId: attempt.id, ...fields };
  }

  /** The acquire-end event: how long it took, and whether the backend ever answered "busy". */
  private endEvent(attempt: Attempt, outcome: AcquireOutcome, fields: Record<string, unknown>): LockEvent {
    const waitedMs = Date.now() - attempt.startedAt;
    return this.event(attempt, { outcome, foundBusy: attempt.foundBusy, waitedMs, ...fields });
  }
}

function outcomeOf(error: unknown): AcquireOutcome {
  if (error instanceof LockTimeoutError) return 'timeout';
  // close() cancels the acquires still waiting, as the caller's own signal would.
  if (error instanceof LockAbortedError || error instanceof ProviderClosedError) return 'aborted';
  return 'error';
}
