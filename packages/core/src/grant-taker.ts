import { sleep } from './abort.js';
import { type Attempt, isSlotRequest, leaseStartOf, renewLockId } from './attempt.js';
import type { BackendGrant, CallContext, GrantOutcome, GrantRequest, LockBackend } from './backend.js';
import type { BackendCaller } from './backend-caller.js';
import type { BackgroundWork } from './background-work.js';
import { CHANNELS, publish } from './diagnostics.js';
import { BackendError, ErrorCode, HoldfastError, LockAbortedError, LockTimeoutError } from './errors.js';
import { safetyDeadline } from './renewal-policy.js';

/** Longest single wait between attempts, so that a missed wake-up costs at most this much. */
const MAX_WAIT_SLICE_MS = 15_000;
/** How long past its own timeout a wake-up wait may run before core stops waiting for it. */
const WAIT_OVERRUN_MS = 1000;
const MAX_RETRY_DELAY_MS = 1000;

/**
 * Getting a grant from the backend: one bounded attempt, or attempts and waits until the caller's
 * deadline (the backend's FIFO queue, its wake-ups, or polling), retrying backend failures.
 */
export class GrantTaker {
  constructor(
    private readonly backend: LockBackend,
    private readonly caller: BackendCaller,
    private readonly background: BackgroundWork,
    private readonly owner: string,
    private readonly pollIntervalMs: number,
  ) {}

  /**
   * One grant attempt under the caller's bounds; a grant that lands after the caller gave up is
   * released. A busy answer is kept on the attempt for the wait that follows.
   */
  async attemptGrant(attempt: Attempt, signal: AbortSignal | undefined, deadline: number | undefined): Promise<BackendGrant | null> {
    attempt.sentAt = Date.now();
    const outcome = await this.caller
      .run('acquire', (call) => this.grantOnce(attempt.request, call), {
        signal,
        deadline,
        onAbandoned: (late) => {
          this.background.undoLateGrant(attempt.request, late);
          renewLockId(attempt);
        },
      })
      .catch((error: unknown) => {
        // A failed attempt's undo may reach a server later than its answer (after the attempt's own
        // late command): the retry must not share its lockId, or that undo could free the retry's grant.
        renewLockId(attempt);
        throw error;
      });
    if (!outcome.granted) {
      attempt.busy = outcome;
      // A refused attempt may also have been undone where it landed (a quorum's minority), and that
      // owner-checked undo can reach a server after the next attempt's grant: never under the same lockId.
      renewLockId(attempt);
      return null;
    }
    const grant = outcome.grant;
    if (Date.now() >= safetyDeadline(leaseStartOf(attempt, grant), attempt.request.ttlMs)) {
      // The process or the network stalled between request and reply for longer than the lease:
      // the lock may already be someone else's. Never hand it out; a waiting acquire tries again.
      this.background.release(grant);
      renewLockId(attempt);
      throw new BackendError(
        this.backend.name,
        'acquire: the grant arrived after its lease had run out (a stalled process or network); it was released',
      );
    }
    return grant;
  }

  async waitForGrant(attempt: Attempt, waitMs: number, signal: AbortSignal): Promise<BackendGrant> {
    const deadline = Date.now() + waitMs;
    const backend = this.backend;
    if (backend.acquireQueued && !isSlotRequest(attempt.request)) {
      // waitMs 0 stays one plain attempt below: it never joins a queue.
      if (backend.queuedAcquireTriesFirst && waitMs > 0) return this.queuedFromTheStart(attempt, waitMs, deadline, signal);
      // Hand-off to the first waiter keeps a released key from ever looking free, so trying first
      // cannot jump the queue; it tells a waiter apart from an immediate grant.
      // A backend failure of that attempt is retried by the queued wait, as the loop below retries it.
      // Bounded by the deadline like every waiting attempt: a hung server must not hold the caller past it.
      const immediate = await this.attemptGrant(attempt, signal, waitMs === 0 ? undefined : deadline).catch((error: unknown) => {
        // Cut by the deadline, or failed with no time left: the failure is the answer.
        if (waitMs === 0 || signal.aborted || !isTransient(error) || Date.now() >= deadline) throw error;
        return null;
      });
      if (immediate) return this.unlessAborted(attempt, immediate, signal);
      if (waitMs === 0) throw new LockTimeoutError(attempt.request.key, waitMs);
      publish(CHANNELS.wait, () => ({ backend: backend.name, owner: this.owner, key: attempt.request.key }));
      attempt.sentAt = Date.now();
      attempt.queued = true;
      const grant = await this.queuedWait(attempt, deadline, signal);
      if (grant) return this.unlessAborted(attempt, grant, signal);
      throw new LockTimeoutError(attempt.request.key, waitMs);
    }
    const retry = new BackendRetry();
    let sawBusy = false;
    let waited = false;
    for (;;) {
      let grant: BackendGrant | null = null;
      try {
        // waitMs 0 is one attempt: it is bounded by the per-call timeout only.
        grant = await this.attemptGrant(attempt, signal, waitMs === 0 ? undefined : deadline);
        retry.succeeded();
        sawBusy = true;
      } catch (error) {
        if (signal.aborted || !isTransient(error)) throw error;
        // An attempt cut by the deadline after the backend had answered "busy" is a timeout, not a failure.
        if (sawBusy && Date.now() >= deadline) throw new LockTimeoutError(attempt.request.key, waitMs);
        retry.failed(error);
      }
      if (grant) return this.unlessAborted(attempt, grant, signal);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw retry.lastError ?? new LockTimeoutError(attempt.request.key, waitMs);
      if (retry.lastError) {
        await sleep(Math.min(remaining, retry.nextDelayMs(this.pollIntervalMs)), signal);
        if (Date.now() >= deadline) throw retry.lastError;
        continue;
      }
      const slice = Math.min(remaining, MAX_WAIT_SLICE_MS);
      if (!waited) {
        waited = true;
        publish(CHANNELS.wait, () => ({ backend: backend.name, owner: this.owner, key: attempt.request.key }));
      }
      if (backend.waitForChange) {
        await this.caller
          // A wait lasts its slice, not one call's timeout; the adapter gets the call's own signal,
          // so a wait core stopped waiting for ends too and never overlaps the next one.
          .run('wait', (call) => backend.waitForChange!(attempt.request.key, attempt.busy, { signal: call.signal, timeoutMs: slice }), {
            signal,
            budgetMs: slice + WAIT_OVERRUN_MS,
          })
          // A failed wait is no answer about the key: poll once more after the usual interval.
          .catch(() => (signal.aborted ? undefined : sleep(Math.min(slice, this.pollIntervalMs), signal)));
      } else {
        await sleep(Math.min(slice, this.pollIntervalMs), signal);
      }
      if (signal.aborted) throw new LockAbortedError(attempt.request.key, signal.reason);
      // An attempt with no time left could only be cut short and leave a late grant to undo.
      if (Date.now() >= deadline) throw retry.lastError ?? new LockTimeoutError(attempt.request.key, waitMs);
    }
  }

  /** A backend whose queued acquire makes the first attempt itself: it says when the caller starts waiting. */
  private async queuedFromTheStart(attempt: Attempt, waitMs: number, deadline: number, signal: AbortSignal): Promise<BackendGrant> {
    const backend = this.backend;
    const key = attempt.request.key;
    attempt.sentAt = Date.now();
    attempt.queued = true;
    const onWaiting = (): void => publish(CHANNELS.wait, () => ({ backend: backend.name, owner: this.owner, key }));
    const grant = await this.queuedWait(attempt, deadline, signal, onWaiting);
    if (grant) return this.unlessAborted(attempt, grant, signal);
    throw new LockTimeoutError(key, waitMs);
  }

  /**
   * The backend's own queued wait, bounded like every other call: core stops waiting
   * WAIT_OVERRUN_MS after the deadline or the abort, whatever the adapter does, and releases a
   * grant the adapter still makes after that.
   */
  private queuedWait(attempt: Attempt, deadline: number, signal: AbortSignal, onWaiting?: () => void): Promise<BackendGrant | null> {
    const wait = (call: CallContext) => (onWaiting ? { signal: call.signal, deadline, onWaiting } : { signal: call.signal, deadline });
    return this.caller.run('acquire', (call) => this.backend.acquireQueued!(attempt.request, wait(call)), {
      signal,
      budgetMs: deadline - Date.now() + WAIT_OVERRUN_MS,
      abortGraceMs: WAIT_OVERRUN_MS,
      timeoutMessage: `the backend's queued wait ran ${WAIT_OVERRUN_MS} ms past its deadline; core stopped waiting`,
      onAbandoned: (late) => {
        late.then(
          (grant) => {
            if (grant) this.background.release(grant);
          },
          () => undefined,
        );
      },
    });
  }

  /** A grant that arrives after the caller gave up is released at once: nothing is left behind. */
  private async unlessAborted(attempt: Attempt, grant: BackendGrant, signal: AbortSignal): Promise<BackendGrant> {
    if (!signal.aborted) return grant;
    await this.background.releaseQuietly(grant);
    throw new LockAbortedError(attempt.request.key, signal.reason);
  }

  /** The backend's one attempt: at the key, or at a semaphore slot of it. */
  private grantOnce(request: GrantRequest, call: CallContext): Promise<GrantOutcome> {
    return isSlotRequest(request) ? this.backend.tryGrantSlot!(request, call) : this.backend.tryGrant(request, call);
  }
}

/** Backend failures are worth retrying while a caller still waits; bad input and conflicts are not. */
function isTransient(error: unknown): boolean {
  return error instanceof HoldfastError && error.code === ErrorCode.Backend;
}

/** Remembers the last backend failure of a waiting acquire and spaces out the retries. */
class BackendRetry {
  lastError: unknown;
  private failures = 0;

  succeeded(): void {
    this.lastError = undefined;
    this.failures = 0;
  }

  failed(error: unknown): void {
    this.lastError = error;
    this.failures++;
  }

  nextDelayMs(baseMs: number): number {
    return Math.min(MAX_RETRY_DELAY_MS, baseMs * 2 ** Math.min(this.failures - 1, 4));
  }
}
