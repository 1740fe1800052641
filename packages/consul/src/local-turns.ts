import { MAX_TIMER_MS } from '@holdfast/core/backend';

interface Place {
  start(): void;
}

/** A waiter's turn; end() passes it on to the provider's next waiter on the key. */
export interface Turn {
  end(): void;
}

/**
 * The provider's waiters on one key take turns, first come first: only the one whose turn it is
 * stands in Consul's queue, so N local waiters cost one queue entry and one blocking query, not N.
 */
export class LocalTurns {
  private readonly lines = new Map<string, Place[]>();

  /** Resolves with the turn once it is this caller's, null at `deadline`; rejects with the signal's reason on abort. */
  take(key: string, signal: AbortSignal, deadline: number): Promise<Turn | null> {
    if (signal.aborted) return Promise.reject(signal.reason);
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = []));
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const stopWaiting = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      const place: Place = {
        start: () => {
          stopWaiting();
          resolve(turn);
        },
      };
      const turn: Turn = { end: () => this.leave(key, place) };
      const onAbort = (): void => {
        stopWaiting();
        this.leave(key, place);
        reject(signal.reason);
      };
      line.push(place);
      if (line.length === 1) return resolve(turn);
      const untilDeadline = Math.max(0, deadline - Date.now());
      // No limit (or one past setTimeout's range): no timer, which would fire at once.
      if (untilDeadline <= MAX_TIMER_MS) {
        timer = setTimeout(() => {
          stopWaiting();
          this.leave(key, place);
          resolve(null);
        }, untilDeadline);
      }
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private leave(key: string, place: Place): void {
    const line = this.lines.get(key);
    const at = line?.indexOf(place) ?? -1;
    if (!line || at < 0) return;
    line.splice(at, 1);
    if (line.length === 0) this.lines.delete(key);
    else if (at === 0) line[0]!.start();
  }
}
