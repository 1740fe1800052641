import type { GrantSession } from './session-kinds.js';

/** How long a spare waits for the provider's next slot attempt before it is destroyed. */
const SPARE_IDLE_MS = 5000;
/** Spares kept per session TTL; beyond (a burst of losers), they are destroyed at once. */
const MAX_SPARES = 8;

interface Spare {
  readonly session: GrantSession;
  readonly timer: NodeJS.Timeout;
}

/**
 * Renewed slot sessions that hold nothing: an attempt made one, then found no free slot after all
 * (another contender's claim landed first). Every slot needs a session of its own (holders are named
 * by session), and creating then destroying one is two Raft writes, more than the lost race itself;
 * under contention most woken attempts lose. A spare serves the provider's next slot attempt with the
 * same session TTL; unused for SPARE_IDLE_MS, or once its renewal fails, it is destroyed.
 */
export class SpareSessions {
  private readonly byTtl = new Map<number, Spare[]>();
  private closed = false;

  take(ttlMs: number): GrantSession | undefined {
    const spare = this.byTtl.get(ttlMs)?.pop();
    if (!spare) return undefined;
    clearTimeout(spare.timer);
    spare.session.onExpired = undefined;
    return spare.session;
  }

  keep(session: GrantSession): void {
    const spares = this.byTtl.get(session.ttlMs) ?? [];
    if (this.closed || session.kind !== 'renewed' || spares.length >= MAX_SPARES) {
      void session.leave();
      return;
    }
    const spare: Spare = { session, timer: setTimeout(() => this.drop(spare), SPARE_IDLE_MS) };
    session.onExpired = () => this.drop(spare);
    spares.push(spare);
    this.byTtl.set(session.ttlMs, spares);
  }

  /** Destroys every spare, each destroy bounded by `signal`. */
  async close(signal: AbortSignal): Promise<void> {
    this.closed = true;
    const spares = [...this.byTtl.values()].flat();
    this.byTtl.clear();
    await Promise.all(
      spares.map((spare) => {
        clearTimeout(spare.timer);
        return spare.session.leave(signal);
      }),
    );
  }

  private drop(spare: Spare): void {
    const spares = this.byTtl.get(spare.session.ttlMs);
    const at = spares?.indexOf(spare) ?? -1;
    if (at < 0) return;
    spares!.splice(at, 1);
    clearTimeout(spare.timer);
    void spare.session.leave();
  }
}
