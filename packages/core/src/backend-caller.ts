import type { CallContext, LockBackend } from './backend.js';
import { CallDeadlines, type Expiring } from './call-deadlines.js';
import { type AnswerCheck, contractError } from './contract-check.js';
import { CHANNELS, publish } from './diagnostics.js';
import { BackendError, ErrorCode, type HoldfastError } from './errors.js';
import { MAX_TIMER_MS } from './timer-range.js';
import { toBackendError } from './wrap-backend-error.js';

export const DEFAULT_CALL_TIMEOUT_MS = 5000;

export interface CallBounds<T = unknown> {
  /** The lock's key, for the `holdfast:backend-error` event of a failed call about one key. */
  readonly key?: string | undefined;
  /** The caller's own signal: when it aborts, the call rejects with its reason. */
  readonly signal?: AbortSignal | undefined;
  /**
   * The call also ends when the provider's close() begins (an acquire's attempt given the caller's
   * signal): bounded by both without an AbortSignal built to follow the two.
   */
  readonly endsOnClose?: boolean;
  /** Absolute time (epoch ms) after which the caller no longer waits, tighter than the per-call timeout. */
  readonly deadline?: number | undefined;
  /**
   * The deadline is core's own (a lease's safety deadline), not the caller's patience: no answer by
   * then is a backend failure (`holdfast:backend-error`), as it would be at the per-call timeout.
   */
  readonly deadlineIsOwn?: boolean;
  /**
   * Replaces the per-call timeout for a call that is meant to last (a wait for a change, bounded by
   * its slice); one past setTimeout's range (Infinity) is bounded by the signal alone.
   */
  readonly budgetMs?: number | undefined;
  /** The rule the adapter's answer must keep; a broken one rejects the call with an AdapterContractError. */
  readonly check?: AnswerCheck | undefined;
  /**
   * Called with the call's own promise when the caller stopped waiting before it settled, so that
   * whatever it did late (a grant that lands after all) can be undone.
   */
  readonly onAbandoned?: (late: Promise<T>) => void;
}

const NO_BOUNDS: CallBounds = Object.freeze({});

/**
 * Operations an adapter may answer without reaching its server (an undo on a node never reached, a
 * queue kept in the process, a wait that timed out): their answers do not show that the backend
 * ever answered, or a wrong URL would fail fast once and then be retried forever.
 */
const ANSWERED_WITHOUT_CONTACT: ReadonlySet<string> = new Set(['abandon', 'leaveQueue', 'wait']);

/**
 * Runs every backend call under a bound: the caller's signal, the caller's deadline and the
 * per-call timeout. The adapter gets a signal to stop its I/O; core stops waiting at that moment
 * whatever the adapter does, because a hung server must never hang the caller.
 */
export class BackendCaller {
  /** Every bounded call's deadline, on one timer. */
  private readonly deadlines = new CallDeadlines();
  /**
   * Calls that end when the provider's `closing` aborts (their caller's signal is it, or
   * `endsOnClose`): given up by one listener, not one each, as adding and removing an abort listener
   * per call costs more client CPU than the Set.
   */
  private readonly closingCalls = new Set<BoundedCall<unknown>>();
  /**
   * The backend has answered this provider at least once (a result, or a refusal of its own such as
   * a conflict): a waiting acquire retries only a backend that was reachable before, unless asked.
   */
  answered = false;

  constructor(
    readonly backend: LockBackend,
    readonly callTimeoutMs: number,
    /** The provider's owner id, named in `holdfast:backend-error` events. */
    readonly owner = '',
    /** Aborted as the provider's close() begins: a call whose caller's signal it is ends then. */
    readonly closing?: AbortSignal,
  ) {
    closing?.addEventListener(
      'abort',
      () => {
        for (const call of [...this.closingCalls]) call.closed(closing.reason);
      },
      { once: true },
    );
  }

  /** The provider is closed: from now on no timer outlives the calls in flight. */
  close(): void {
    this.deadlines.close();
  }

  run<T>(operation: string, fn: (call: CallContext) => Promise<T>, bounds: CallBounds<T> = NO_BOUNDS): Promise<T> {
    const callerSignal = bounds.signal;
    if (callerSignal?.aborted) return Promise.reject(callerSignal.reason);
    if (bounds.endsOnClose && this.closing?.aborted) return Promise.reject(this.closing.reason);
    const ownBudget = bounds.budgetMs ?? this.callTimeoutMs;
    const untilDeadline = (bounds.deadline ?? Infinity) - Date.now();
    const budget = Math.max(0, Math.min(ownBudget, untilDeadline));
    // Cut by the caller's deadline, a call is not a backend failure: the caller stopped waiting first.
    const silenceFails = ownBudget <= untilDeadline || bounds.deadlineIsOwn === true;
    return new Promise<T>((resolve, reject) => {
      const call = new BoundedCall<T>(this, operation, budget, silenceFails, bounds, resolve, reject);
      call.start(fn, budget <= MAX_TIMER_MS ? this.deadlines : undefined, this.closingCalls);
    });
  }
}

/**
 * One call core waits for. Its AbortController exists only once an adapter reads `signal`:
 * in-process backends never do, and a controller per call was most of a memory grant's cost.
 */
class BoundedCall<T> implements CallContext, Expiring {
  dueAt = 0;
  private settled = false;
  private controller: AbortController | undefined;
  /** onAbort() listeners: most calls have one at most, so no array until a second comes. */
  private abortListener: ((reason: unknown) => void) | undefined;
  private moreAbortListeners: ((reason: unknown) => void)[] | undefined;
  private abortedWith: { reason: unknown } | undefined;
  private deadlines: CallDeadlines | undefined;
  /** The caller's set of calls that end when the provider closes, when this call is one of them. */
  private closingCalls: Set<BoundedCall<unknown>> | undefined;
  private pending: Promise<T> | undefined;

  constructor(
    private readonly caller: BackendCaller,
    private readonly operation: string,
    private readonly budget: number,
    private readonly silenceFails: boolean,
    private readonly bounds: CallBounds<T>,
    private readonly resolve: (value: T) => void,
    private readonly reject: (reason: unknown) => void,
  ) {}

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  onAbort(listener: (reason: unknown) => void): void {
    if (this.abortedWith) listener(this.abortedWith.reason);
    else if (this.settled) return;
    else if (!this.abortListener) this.abortListener = listener;
    else (this.moreAbortListeners ??= []).push(listener);
  }

  /** `deadlines`: none for a budget past setTimeout's range (bounded by the signal alone). */
  start(fn: (call: CallContext) => Promise<T>, deadlines: CallDeadlines | undefined, closingCalls: Set<BoundedCall<unknown>>): void {
    if (deadlines) {
      this.dueAt = performance.now() + this.budget;
      this.deadlines = deadlines;
      deadlines.add(this);
    }
    const { signal, endsOnClose } = this.bounds;
    const closing = this.caller.closing;
    if (closing && (endsOnClose || signal === closing)) {
      this.closingCalls = closingCalls;
      closingCalls.add(this as BoundedCall<unknown>);
    }
    if (signal !== undefined && signal !== closing) signal.addEventListener('abort', this, { once: true });
    let pending: Promise<T>;
    try {
      pending = Promise.resolve(fn(this));
    } catch (error) {
      pending = Promise.reject(error);
    }
    this.pending = pending;
    if (this.settled) this.bounds.onAbandoned?.(pending);
    pending.then(
      (value) => {
        if (this.settled) return;
        if (!ANSWERED_WITHOUT_CONTACT.has(this.operation)) this.caller.answered = true;
        this.finish();
        this.dropAbortListeners();
        const check = this.bounds.check;
        const breach = check?.breach(value);
        if (breach) this.reject(contractError(this.caller.backend.name, check!.method, breach));
        else this.resolve(value);
      },
      (error: unknown) => {
        if (this.settled) return;
        this.finish();
        this.dropAbortListeners();
        const typed = toBackendError(this.caller.backend.name, this.operation, error);
        if (typed.code === ErrorCode.Backend) this.reportFailure(typed);
        else if (!ANSWERED_WITHOUT_CONTACT.has(this.operation)) this.caller.answered = true;
        this.reject(typed);
      },
    );
  }

  /** The per-call timeout, or the caller's deadline, passed. */
  expire(): void {
    const silence = new BackendError(this.caller.backend.name, `${this.operation}: no answer within ${Math.round(this.budget)} ms`);
    if (this.silenceFails) this.reportFailure(silence);
    this.giveUp(silence);
  }

  /** Every failed backend call, counted where all of them pass (metrics of backend errors). */
  private reportFailure(error: HoldfastError): void {
    const { backend, owner } = this.caller;
    publish(CHANNELS.backendError, () => ({ backend: backend.name, owner, key: this.bounds.key, operation: this.operation, error }));
  }

  /** The caller's signal aborted (an EventListener object: no closure per call). */
  handleEvent(): void {
    this.giveUp(this.bounds.signal!.reason);
  }

  /** The provider's close() began. */
  closed(reason: unknown): void {
    this.giveUp(reason);
  }

  private giveUp(reason: unknown): void {
    if (this.settled) return;
    this.finish();
    this.abortCall(reason);
    // A caller's signal can abort from inside fn itself: then the late work is known once fn returns.
    if (this.pending) this.bounds.onAbandoned?.(this.pending);
    this.reject(reason);
  }

  private abortCall(reason: unknown): void {
    if (this.abortedWith) return;
    this.abortedWith = { reason };
    this.controller?.abort(reason);
    const { abortListener, moreAbortListeners } = this;
    this.dropAbortListeners();
    abortListener?.(reason);
    if (moreAbortListeners) for (const listener of moreAbortListeners) listener(reason);
  }

  /** A call that settled never calls its onAbort() listeners. */
  private dropAbortListeners(): void {
    this.abortListener = undefined;
    this.moreAbortListeners = undefined;
  }

  private finish(): void {
    this.settled = true;
    this.deadlines?.delete(this);
    this.deadlines = undefined;
    this.closingCalls?.delete(this as BoundedCall<unknown>);
    const signal = this.bounds.signal;
    if (signal !== undefined && signal !== this.caller.closing) signal.removeEventListener('abort', this);
  }
}
