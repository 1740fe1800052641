import { linkedController } from './abort.js';
import { type Attempt, leaseStartOf, newAttempt } from './attempt.js';
import type { BackendGrant, LockBackend } from './backend.js';
import type { BackgroundWork } from './background-work.js';
import { CHANNELS, publish } from './diagnostics.js';
import { LockAbortedError, ProviderClosedError } from './errors.js';
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

  /** One attempt at the key (limit undefined) or at one of its semaphore slots. */
  async tryTake(key: string, options: AcquireOptions | undefined, limit: number | undefined): Promise<Lock | null> {
    const validated = this.validated(key, options);
    const attempt = newAttempt(key, this.context.owner, validated, limit, 0);
    publish(CHANNELS.acquire, () => ({ backend: this.context.backend.name, owner: this.context.owner, key, waitMs: 0 }));
    let grant: BackendGrant | null;
    try {
      grant = await this.context.grants.attemptGrant(attempt, validated.signal, undefined);
    } catch (error) {
      if (validated.signal?.aborted) throw new LockAbortedError(key, validated.signal.reason);
      throw error;
    }
    return grant ? this.adopt(attempt, grant) : null;
  }

  async take(key: string, options: AcquireOptions | undefined, limit: number | undefined): Promise<Lock> {
    const validated = this.validated(key, options);
    const { controller, dispose } = linkedController(validated.signal, this.context.closing);
    try {
      const attempt = newAttempt(key, this.context.owner, validated, limit, validated.waitMs);
      publish(CHANNELS.acquire, () => ({ backend: this.context.backend.name, owner: this.context.owner, key, waitMs: validated.waitMs }));
      const grant = await this.context.grants.waitForGrant(attempt, validated.waitMs, controller.signal);
      return await this.adopt(attempt, grant);
    } catch (error) {
      // Whatever the backend was doing when the caller or close() cancelled, the cancellation is the answer.
      if (this.context.closing.aborted) throw new ProviderClosedError(this.context.backend.name);
      if (controller.signal.aborted) throw new LockAbortedError(key, controller.signal.reason);
      throw error;
    } finally {
      dispose();
    }
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
    if (this.context.isClosed()) return this.refuseAfterClose(grant);
    const handle = new HeldLock(this.context.lockContext, attempt.request, grant, leaseStartOf(attempt));
    this.context.handles.add(handle);
    attempt.handle = handle;
    publish(CHANNELS.grant, () => ({
      backend: this.context.backend.name,
      owner: this.context.owner,
      key: handle.key,
      token: handle.token,
      waitedMs: Date.now() - attempt.startedAt,
      expiresAt: handle.expiresAt,
    }));
    if (attempt.pendingLoss) handle.markLost(attempt.pendingLoss.detail, attempt.pendingLoss.cause);
    return handle;
  }

  private async refuseAfterClose(grant: BackendGrant): Promise<never> {
    await this.context.background.releaseQuietly(grant);
    throw new ProviderClosedError(this.context.backend.name);
  }
}
