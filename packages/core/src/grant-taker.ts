import { pause, sleep } from './abort.js';
import type { AcquireStop } from './acquire-stop.js';
import { type Attempt, isModeRequest, isSlotRequest, leaseStartOf, renewLockId } from './attempt.js';
import type { BackendGrant, CallContext, GrantOutcome, GrantRequest, LockBackend, QueuePlace, WaitOptions } from './backend.js';
import type { BackendCaller } from './backend-caller.js';
import type { BackgroundWork } from './background-work.js';
import { ANSWER_CHECKS, type AnswerCheck } from './contract-check.js';
import { CHANNELS, publish } from './diagnostics.js';
import {
  AdapterContractError,
  BackendError,
  BackendNeverAnsweredError,
  ErrorCode,
  HoldfastError,
  LockAbortedError,
  LockTimeoutError,
} from './errors.js';
import type { OutageReport } from './outage-report.js';
import { safetyDeadline } from './renewal-policy.js';

/** Longest single wait between attempts, so that a missed wake-up costs at most this much. */
const MAX_WAIT_SLICE_MS = 15_000;
/** How long past its own timeout a wake-up wait may run before core stops waiting for it. */
const WAIT_OVERRUN_MS = 1000;
const MAX_RETRY_DELAY_MS = 1000;
/**
 * How long an acquire that ends without a lock waits for what it may still hold to go: the grants
 * of calls it stopped waiting for (undone once they settle), and its place in a queue whose places
 * hold the key by themselves (LockBackend.placesHoldKeys). One round trip normally; a hung server
 * must not hold the caller's answer much past its deadline or abort.
 */
const GIVE_UP_GRACE_MS = 500;
/** Microtask turns an aborted adapter call gets for its rejection to reach core (a few per await level of the adapter). */
const SETTLE_TICKS = 64;

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
    private readonly outages: OutageReport,
  ) {}

  /**
   * One grant attempt under the caller's bounds; a grant that lands after the caller gave up is
   * released. A busy answer is kept on the attempt for the wait that follows. `endsOnClose`: the
   * attempt also ends when the provider's close() begins.
   */
  async attemptGrant(
    attempt: Attempt,
    signal: AbortSignal | undefined,
    deadline: number | undefined,
    endsOnClose = false,
  ): Promise<BackendGrant | null> {
    attempt.sentAt = Date.now();
    const ended = (): void => void attempt.lateCallsOpen--;
    const outcome = await this.caller
      .run('acquire', (call) => this.grantOnce(attempt.request, call), {
        key: attempt.request.key,
        signal,
        endsOnClose,
        deadline,
        check: checkOf(attempt.request),
        onAbandoned: (late) => {
          // Several cut attempts may be in flight at once: leaving the queue waits for all of them.
          attempt.lateCall = attempt.lateCall ? Promise.allSettled([attempt.lateCall, late]) : late;
          attempt.lateCallsOpen++;
          void late.then(ended, ended);
          const undo = this.background.undoLateGrant(attempt.request, late);
          attempt.lateUndo = attempt.lateUndo ? Promise.all([attempt.lateUndo, undo]) : undo;
          renewLockId(attempt);
        },
      })
      .catch((error: unknown) => {
        // Whatever a wrong answer meant, the attempt may hold the key: undo it (owner-checked, a no-op
        // when nothing landed); it is never handed out, and a waiting acquire does not retry an adapter bug.
        if (error instanceof AdapterContractError) this.background.undoLateGrant(attempt.request, Promise.resolve());
        // A failed attempt's undo may reach a server later than its answer (after the attempt's own
        // late command): the retry must not share its lockId, or that undo could free the retry's grant.
        renewLockId(attempt);
        throw error;
      });
    if (!outcome.granted) {
      attempt.busy = outcome;
      attempt.foundBusy = true;
      // A refused attempt may also have been undone where it landed (a quorum's minority), and that
      // owner-checked undo can reach a server after the next attempt's grant: never under the same lockId.
      renewLockId(attempt);
      return null;
    }
    const grant = outcome.grant;
    if (Date.now() >= safetyDeadline(leaseStartOf(attempt), attempt.request.ttlMs)) {
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

  /**
   * Attempts and waits until a grant or the caller's deadline: the one wait loop every backend
   * shares. Backend failures are retried with backoff until the deadline; between busy answers the
   * backend's waitForChange (its release messages, blocking queries, queue hand-off) or a poll
   * decides when to try again. Every attempt carries the acquire's place in line, which is left
   * (leaveQueue) whenever the acquire ends without a lock.
   */
  async waitForGrant(attempt: Attempt, waitMs: number, stop: AcquireStop, waitForBackend = false): Promise<BackendGrant> {
    const key = attempt.request.key;
    if (waitMs === 0) {
      // One attempt, bounded by the per-call timeout only; it never joins a queue.
      const grant = await this.attemptGrant(attempt, stop.callSignal, undefined, stop.callEndsOnClose).catch(async (error: unknown) => {
        await this.giveUp(attempt, undefined, stop.aborted);
        throw error;
      });
      if (grant) return this.unlessAborted(attempt, grant, stop);
      throw new LockTimeoutError(key, waitMs);
    }
    // Made with the attempt (newAttempt): its `until` is the caller's deadline.
    const place = attempt.request.place!;
    const deadline = place.until;
    const retry = new BackendRetry();
    let sawBusy = false;
    let waited = false;
    try {
      for (;;) {
        try {
          const grant = await this.attemptGrant(attempt, stop.callSignal, deadline, stop.callEndsOnClose);
          // Returned from here, not from a helper: an in-process grant then costs no extra promise.
          if (grant) return this.unlessAborted(attempt, grant, stop, place);
          retry.succeeded();
          sawBusy = true;
        } catch (error) {
          if (stop.aborted || !isTransient(error)) throw error;
          // An attempt cut by the deadline after the backend had answered "busy" is a timeout, not a failure.
          if (sawBusy && Date.now() >= deadline) throw new LockTimeoutError(key, waitMs);
          // A wrong URL must not hang a caller that waits forever: retry only a backend that answered before.
          const answeredBefore = this.caller.answered;
          if (!answeredBefore && !waitForBackend) throw new BackendNeverAnsweredError(this.backend.name, error);
          retry.failed(error);
          this.outages.retrying(key, error, retry.failures, answeredBefore);
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw retry.lastError ?? new LockTimeoutError(key, waitMs);
        if (retry.lastError) {
          await sleep(Math.min(remaining, retry.nextDelayMs(this.pollIntervalMs)), stop.signal);
        } else {
          if (!waited) {
            waited = true;
            publish(CHANNELS.wait, () => ({ backend: this.backend.name, owner: this.owner, key, acquireId: attempt.id }));
          }
          await this.waitForChange(attempt, Math.min(remaining, MAX_WAIT_SLICE_MS), stop.signal);
        }
        if (stop.aborted) throw new LockAbortedError(key, stop.reason);
        // An attempt with no time left could only be cut short and leave a late grant to undo.
        if (Date.now() >= deadline) throw retry.lastError ?? new LockTimeoutError(key, waitMs);
      }
    } catch (error) {
      await this.giveUp(attempt, place, stop.aborted);
      throw error;
    }
  }

  /**
   * The acquire ends without a lock: its place leaves the queue, and what its abandoned calls were
   * granted is undone. The caller hears the answer only after its place went where places hold the
   * key by themselves, as etcd's Mutex.Lock and Curator do for their queue nodes; and, when its
   * signal gave it up, after the undo of what its abandoned calls were granted: otherwise a grant
   * landing just after the answer would hold the key for a caller that has moved on (an election
   * that resigned, a cancelled job) until its lease ran out. Both within GIVE_UP_GRACE_MS. An
   * acquire that ran out of time (its wait, a call's timeout) is not held past it for an undo: that
   * goes on in the background, like a place that only orders waiters.
   */
  async giveUp(attempt: Attempt, place: QueuePlace | undefined, aborted: boolean): Promise<void> {
    const left = place && this.background.leaveQueue(attempt.request.key, place, attempt.lateCall);
    // An adapter ends a call at its abort (LockBackend contract), though its rejection may still be
    // travelling up the adapter's own awaits: a call open after that is stuck on a server that will
    // not answer the undo either, which is then not waited for. Microtasks, not a timer: a timer
    // would stall under the fake clocks of core's tests.
    if (aborted) for (let tick = 0; tick < SETTLE_TICKS && attempt.lateCallsOpen > 0; tick++) await undefined;
    const undo = aborted && attempt.lateCallsOpen === 0 ? attempt.lateUndo : undefined;
    const pending = [undo, this.backend.placesHoldKeys ? left : undefined].filter((work) => work !== undefined);
    if (pending.length === 0) return;
    const grace = new AbortController();
    await Promise.race([Promise.all(pending), pause(GIVE_UP_GRACE_MS, grace.signal)]);
    grace.abort();
  }

  /** Until another attempt is worth making: the backend's wake-up, or the poll interval without one. */
  private async waitForChange(attempt: Attempt, sliceMs: number, signal: AbortSignal): Promise<void> {
    const backend = this.backend;
    if (!backend.waitForChange) {
      await sleep(Math.min(sliceMs, this.pollIntervalMs), signal);
      return;
    }
    const { key, place } = attempt.request;
    await this.caller
      // A wait lasts its slice, not one call's timeout; the adapter gets the call's own signal,
      // so a wait core stopped waiting for ends too and never overlaps the next attempt.
      .run('wait', (call) => backend.waitForChange!(key, attempt.busy, waitOptions(call.signal, sliceMs, place)), {
        key,
        signal,
        budgetMs: sliceMs + WAIT_OVERRUN_MS,
      })
      // A failed wait is no answer about the key: poll once more after the usual interval.
      .catch(() => (signal.aborted ? undefined : sleep(Math.min(sliceMs, this.pollIntervalMs), signal)));
  }

  /** A grant that arrives after the caller gave up is released at once (and its place leaves the queue): nothing is left behind. */
  private unlessAborted(attempt: Attempt, grant: BackendGrant, stop: AcquireStop, place?: QueuePlace): BackendGrant | Promise<never> {
    return stop.aborted ? this.refuse(attempt, grant, stop, place) : grant;
  }

  private async refuse(attempt: Attempt, grant: BackendGrant, stop: AcquireStop, place: QueuePlace | undefined): Promise<never> {
    await Promise.all([this.giveUp(attempt, place, true), this.background.releaseQuietly(grant)]);
    throw new LockAbortedError(attempt.request.key, stop.reason);
  }

  /** The backend's one attempt: at the key, at a semaphore slot of it, or at a read-write grant of it. */
  private grantOnce(request: GrantRequest, call: CallContext): Promise<GrantOutcome> {
    if (isSlotRequest(request)) return this.backend.tryGrantSlot!(request, call);
    if (isModeRequest(request)) return this.backend.tryGrantMode!(request, call);
    return this.backend.tryGrant(request, call);
  }
}

function checkOf(request: GrantRequest): AnswerCheck {
  if (isSlotRequest(request)) return ANSWER_CHECKS.tryGrantSlot;
  return isModeRequest(request) ? ANSWER_CHECKS.tryGrantMode : ANSWER_CHECKS.tryGrant;
}

function waitOptions(signal: AbortSignal, timeoutMs: number, place: QueuePlace | undefined): WaitOptions {
  return place ? { signal, timeoutMs, place } : { signal, timeoutMs };
}

/** Backend failures are worth retrying while a caller still waits; bad input and conflicts are not. */
function isTransient(error: unknown): boolean {
  return error instanceof HoldfastError && error.code === ErrorCode.Backend;
}

/** Remembers the last backend failure of a waiting acquire and spaces out the retries. */
class BackendRetry {
  lastError: unknown;
  failures = 0;

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
