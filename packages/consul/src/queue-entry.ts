import { sleep } from '@holdfast/core/backend';
import type { GrantContext } from './grant.js';
import { invalidSessionRefusal } from './kv.js';
import { dequeue, enqueue, type QueueView } from './queue-place.js';
import type { GrantSession } from './sessions.js';

export interface QueueContext extends GrantContext {
  /** Keeps a clean-up nobody waits for until it ends, so that close() can let it finish first. */
  readonly track: (cleanup: Promise<void>) => void;
  /** Aborted as close() begins: clean-ups that retry stop retrying. */
  readonly closing: AbortSignal;
}

const MAX_RETRY_DELAY_MS = 1000;
const FIRST_RETRY_DELAY_MS = 50;

/**
 * One waiter's entry in a key's queue (queue-place.ts), on the provider's queue session. `written`
 * once Consul confirmed it, `deleted` by the transaction that granted the lock; a write that went
 * unanswered (or is still on its way) may land after any delete, which drop() must allow for.
 */
export class QueueEntry {
  written = false;
  deleted = false;
  private writing = false;
  private mayLandLate = false;

  constructor(
    private readonly context: QueueContext,
    readonly dir: string,
    readonly key: string,
    private readonly session: GrantSession,
  ) {}

  /**
   * Writes the entry and reads the queue in one round trip: the queue as the write saw it, or why
   * Consul refused it. Sent again after an unanswered write: a session's lock on its own entry is idempotent.
   */
  async write(owner: string, lockId: string, signal: AbortSignal): Promise<QueueView | string> {
    let written: Awaited<ReturnType<typeof enqueue>>;
    this.writing = true;
    try {
      written = await enqueue(this.context.http, { dir: this.dir, entryKey: this.key }, this.session.id, owner, lockId, signal);
    } catch (error) {
      this.mayLandLate = true;
      throw error;
    } finally {
      this.writing = false;
    }
    if (!('ok' in written)) {
      this.written = true;
      return written;
    }
    if (invalidSessionRefusal(written)) this.session.discard();
    return written.ok ? 'no answer' : written.errors.map((error) => error.what).join('; ') || 'refused';
  }

  /**
   * Deletes the entry (a clean-up nobody waits for) and gives its session back. An entry that may
   * outlive its waiter (a write of it unanswered, or its delete failed) would stay live as long as its
   * session is renewed, and everyone behind it would wait for it until their deadline: its session is
   * dropped (destroyed now, never renewed again), so it is dead within 2 x session TTL at the very
   * worst, at once when the destroy lands. The delete is retried until it lands, 2 x session TTL
   * passed (the entry is dead by then, and whoever reads the queue prunes it) or close() begins.
   */
  drop(): void {
    const mayLandLate = this.mayLandLate || this.writing;
    if (mayLandLate) this.context.sessions.dropQueueSession(this.session.id);
    if (!mayLandLate && (this.deleted || !this.written)) {
      void this.session.leave();
      return;
    }
    this.context.track(this.remove().finally(() => this.session.leave()));
  }

  private async remove(): Promise<void> {
    const { http, closing } = this.context;
    const until = Date.now() + 2 * this.session.ttlMs;
    for (let failures = 0; ; failures++) {
      try {
        await dequeue(http, this.key, this.context.background());
        return;
      } catch {
        if (failures === 0) this.context.sessions.dropQueueSession(this.session.id);
        if (closing.aborted || Date.now() >= until) return;
        const delayMs = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(failures, 5));
        await sleep(delayMs, closing).catch(() => undefined);
      }
    }
  }
}
