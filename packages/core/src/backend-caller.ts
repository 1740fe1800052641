import type { CallContext, LockBackend } from './backend.js';
import { BackendError } from './errors.js';
import { toBackendError } from './wrap-backend-error.js';

export const DEFAULT_CALL_TIMEOUT_MS = 5000;

export interface CallBounds {
  /** The caller's own signal: when it aborts, the call rejects with its reason. */
  readonly signal?: AbortSignal | undefined;
  /** Absolute time (epoch ms) after which the caller no longer waits, tighter than the per-call timeout. */
  readonly deadline?: number | undefined;
  /** Replaces the per-call timeout for a call that is meant to last (a wait for a change, bounded by its slice). */
  readonly budgetMs?: number | undefined;
  /**
   * Called with the call's own promise when the caller stopped waiting before it settled, so that
   * whatever it did late (a grant that lands after all) can be undone.
   */
  readonly onAbandoned?: (late: Promise<unknown>) => void;
}

/**
 * Runs every backend call under a bound: the caller's signal, the caller's deadline and the
 * per-call timeout. The adapter gets a signal to stop its I/O; core stops waiting at that moment
 * whatever the adapter does, because a hung server must never hang the caller.
 */
export class BackendCaller {
  constructor(
    readonly backend: LockBackend,
    readonly callTimeoutMs: number,
  ) {}

  run<T>(operation: string, fn: (call: CallContext) => Promise<T>, bounds: CallBounds = {}): Promise<T> {
    const callerSignal = bounds.signal;
    if (callerSignal?.aborted) return Promise.reject(callerSignal.reason);
    const budget = Math.max(0, Math.min(bounds.budgetMs ?? this.callTimeoutMs, (bounds.deadline ?? Infinity) - Date.now()));
    const call = new LazyCall();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (): void => {
        settled = true;
        clearTimeout(timer);
        callerSignal?.removeEventListener('abort', onCallerAbort);
      };
      const giveUp = (reason: unknown): void => {
        if (settled) return;
        finish();
        call.abort(reason);
        bounds.onAbandoned?.(pending);
        reject(reason);
      };
      const onCallerAbort = (): void => giveUp(callerSignal!.reason);
      const timer = setTimeout(
        () => giveUp(new BackendError(this.backend.name, `${operation}: no answer within ${Math.round(budget)} ms`)),
        budget,
      );
      callerSignal?.addEventListener('abort', onCallerAbort, { once: true });
      const pending = (async () => fn(call))();
      pending.then(
        (value) => {
          if (settled) return;
          finish();
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          finish();
          reject(toBackendError(this.backend.name, operation, error));
        },
      );
    });
  }
}

/**
 * A call's context whose AbortController exists only once an adapter reads `signal`: in-process
 * backends never do, and a controller per call was most of a memory grant's cost.
 */
class LazyCall implements CallContext {
  private controller: AbortController | undefined;
  private abortedWith: { reason: unknown } | undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortedWith) this.controller.abort(this.abortedWith.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    this.abortedWith = { reason };
    this.controller?.abort(reason);
  }
}
