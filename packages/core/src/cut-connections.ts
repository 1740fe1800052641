import { sleep } from './abort.js';

/** How often settled() looks again while a cut connection's server-side work still runs. */
const RECHECK_MS = 10;
/** Work still running this long after its connection was cut is not waited for any more (its lease bounds what it can hold). */
const FORGET_AFTER_MS = 30_000;

/** Which of these server-side connection ids (a PostgreSQL backend pid, a MySQL thread id) still run. */
export type StillRunning = (ids: readonly number[], signal: AbortSignal) => Promise<readonly number[]>;

/**
 * The server-side ids of SQL connections cut while a statement ran on them. Cutting a connection
 * does not stop its statement: the server notices the client is gone only when it next writes to
 * it, so an abandoned grant can commit after an undo sent at once on another connection, and hold
 * its key until the lease runs out. An undo (LockBackend.abandon) waits for settled() first: once
 * the connection's server side has ended, its statement has committed or rolled back, and an
 * owner-checked undo finds whatever it left.
 */
export class CutConnections {
  private readonly cutAt = new Map<number, number>();

  /** A connection cut while a statement ran; `id` is its server-side id (ignored when unknown). */
  add(id: number | null | undefined): void {
    if (typeof id !== 'number') return;
    // Pruned here too: an adapter may cut connections without ever asking for settled().
    if (this.cutAt.size > 0) this.forgetOld(new Set(this.cutAt.keys()));
    this.cutAt.set(id, Date.now());
  }

  /** Resolves once the server side of every connection cut so far has ended (or was forgotten); bounded by `signal`. */
  async settled(stillRunning: StillRunning, signal: AbortSignal): Promise<void> {
    const waitingFor = new Set(this.cutAt.keys());
    for (;;) {
      this.forgetOld(waitingFor);
      if (waitingFor.size === 0) return;
      const running = new Set(await stillRunning([...waitingFor], signal));
      for (const id of waitingFor) {
        if (running.has(id)) continue;
        waitingFor.delete(id);
        this.cutAt.delete(id);
      }
      if (waitingFor.size > 0) await sleep(RECHECK_MS, signal);
    }
  }

  private forgetOld(waitingFor: Set<number>): void {
    const now = Date.now();
    for (const id of waitingFor) {
      const at = this.cutAt.get(id);
      if (at !== undefined && now - at <= FORGET_AFTER_MS) continue;
      waitingFor.delete(id);
      this.cutAt.delete(id);
    }
  }
}
