import { pause } from './abort.js';
import type { BackendGrant, GrantRequest, LockBackend, QueuePlace } from './backend.js';
import type { BackendCaller } from './backend-caller.js';

/** A lost grant is let go of for at least twice this long, whatever its TTL. */
const MIN_LET_GO_WINDOW_MS = 10_000;

/**
 * Clean-up work nobody awaits: undoing grants that landed after their caller gave up, releasing
 * grants declared lost. close() waits for it, within its bound. Releases here are owner-checked,
 * so they can never free anyone else's lock.
 */
export class BackgroundWork {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly backend: LockBackend,
    private readonly caller: BackendCaller,
    private readonly closing: AbortSignal,
  ) {}

  /** Undoes what `request` may have been granted, once its abandoned call `late` settles either way (a write can land although its reply was lost). */
  undoLateGrant(request: GrantRequest, late: Promise<unknown>): Promise<unknown> {
    return this.track(
      late
        .catch(() => undefined)
        .then(() => this.caller.run('abandon', (call) => this.backend.abandon(request, call)))
        .catch(() => undefined),
    );
  }

  /**
   * A waiting acquire ended without a lock: its place in the backend's queue goes (see
   * LockBackend.leaveQueue). Resolves once it went (or failed to); callers need not wait.
   */
  leaveQueue(key: string, place: QueuePlace, lateCall: Promise<unknown> | undefined): Promise<unknown> {
    const backend = this.backend;
    if (!backend.leaveQueue) return Promise.resolve();
    // An attempt core stopped waiting for may still join the queue when it lands: leave after it.
    const after = lateCall?.catch(() => undefined) ?? Promise.resolve();
    return this.track(
      after.then(() => this.caller.run('leaveQueue', (call) => backend.leaveQueue!(key, place, call))).catch(() => undefined),
    );
  }

  /** Releases a grant no handle owns; a failure is no one's to report. */
  releaseQuietly(grant: BackendGrant): Promise<unknown> {
    return this.caller.run('release', (call) => grant.release(call)).catch(() => undefined);
  }

  /** releaseQuietly() without waiting for it. */
  release(grant: BackendGrant): void {
    this.track(this.releaseQuietly(grant));
  }

  /**
   * A grant declared lost keeps holding the key on the server if the server simply did not answer
   * (or a session/heartbeat keeps it alive): waiters would block until it expires. Release it as
   * soon as the server answers, for up to two leases.
   */
  letGo(grant: BackendGrant, ttlMs: number): void {
    const giveUpAt = Date.now() + 2 * Math.max(ttlMs, MIN_LET_GO_WINDOW_MS);
    this.track(
      (async () => {
        for (let delayMs = 100; !this.closing.aborted && Date.now() < giveUpAt; delayMs = Math.min(2 * delayMs, 2000)) {
          try {
            await this.caller.run('release', (call) => grant.release(call));
            return;
          } catch {
            await pause(delayMs, this.closing, false);
          }
        }
      })(),
    );
  }

  /** Waits for the pending work to settle, but not beyond `deadline`. */
  async settledBefore(deadline: number): Promise<void> {
    if (this.pending.size === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
    await Promise.race([Promise.allSettled([...this.pending]), timeUp]);
    clearTimeout(timer);
  }

  private track(work: Promise<unknown>): Promise<unknown> {
    const tracked = work.finally(() => this.pending.delete(tracked));
    this.pending.add(tracked);
    return tracked;
  }
}
