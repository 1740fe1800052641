/** One lock's extension, as a batch sends it. */
export interface ExtendItem {
  readonly key: string;
  readonly lockId: string;
  readonly ttlMs: number;
}

/** How a batch's answer names an item: its lockId and key. */
export function extendId(key: string, lockId: string): string {
  return `${lockId}\u0000${key}`;
}

interface Pending extends ExtendItem {
  readonly signal: AbortSignal;
  resolve(expiresAt: Date | null): void;
  reject(error: unknown): void;
}

/** Rows per statement: big enough to renew thousands of locks in a few statements. */
const MAX_BATCH = 1000;
/** Longest an extension waits for others to join it: at most this, and at most a twentieth of its TTL. */
const MAX_GATHER_MS = 25;

/**
 * Extensions asked for within a few ms of each other go out as one UPDATE: core renews each lock a
 * third into its lease, so locks taken at about the same time fall due at about the same time, and
 * 10,000 of them cost a few dozen statements per renewal interval instead of 10,000. The wait is a
 * twentieth of the TTL at most, against a renewal that has two thirds of the lease left. A batch is
 * abandoned only when every caller in it gave up. `send` answers the new expiry of each item still
 * held, keyed by `extendId`. (Shared by the SQL adapters; any backend that can renew many locks in
 * one request can use it.)
 */
export class ExtendBatcher {
  private queue: Pending[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private flushAt = Infinity;

  constructor(private readonly send: (items: readonly ExtendItem[], signal: AbortSignal) => Promise<Map<string, Date>>) {}

  /** The new expiry, or null when the grant is no longer held. */
  extend(item: ExtendItem, signal: AbortSignal): Promise<Date | null> {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      this.queue.push({ ...item, signal, resolve, reject });
      const due = Date.now() + Math.min(MAX_GATHER_MS, item.ttlMs / 20);
      if (due < this.flushAt) {
        clearTimeout(this.timer);
        this.flushAt = due;
        this.timer = setTimeout(() => this.flush(), Math.max(0, due - Date.now()));
      }
    });
  }

  /** Sends whatever is queued now (close() does, so that no timer outlives the provider). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flushAt = Infinity;
    const queued = this.queue;
    this.queue = [];
    for (let i = 0; i < queued.length; i += MAX_BATCH) void this.sendBatch(queued.slice(i, i + MAX_BATCH));
  }

  private async sendBatch(batch: readonly Pending[]): Promise<void> {
    const controller = new AbortController();
    let waiting = batch.length;
    const detach = batch.map((item) => {
      const onAbort = (): void => {
        item.reject(item.signal.reason);
        if (--waiting === 0) controller.abort(item.signal.reason);
      };
      if (item.signal.aborted) onAbort();
      else item.signal.addEventListener('abort', onAbort, { once: true });
      return () => item.signal.removeEventListener('abort', onAbort);
    });
    try {
      const held = await this.send(batch, controller.signal);
      for (const item of batch) item.resolve(held.get(extendId(item.key, item.lockId)) ?? null);
    } catch (error) {
      for (const item of batch) item.reject(error);
    } finally {
      for (const undo of detach) undo();
    }
  }
}
