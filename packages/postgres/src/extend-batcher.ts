import { type ExtendItem, extendId } from './lock-table.js';

interface Pending extends ExtendItem {
  readonly signal: AbortSignal;
  resolve(expiresAt: Date | null): void;
  reject(error: unknown): void;
}

/** Rows per statement: big enough to renew thousands of locks in a few statements. */
const MAX_BATCH = 1000;

/**
 * Extensions asked for in the same turn of the event loop go out as one UPDATE: core renews locks
 * that fall due together from one timer callback, so 10,000 locks taken together are renewed with
 * ten statements per interval, not 10,000. A batch is abandoned only when every caller in it gave up.
 */
export class ExtendBatcher {
  private queue: Pending[] = [];

  constructor(private readonly send: (items: readonly ExtendItem[], signal: AbortSignal) => Promise<Map<string, Date>>) {}

  /** The new expiry, or null when the grant is no longer held. */
  extend(item: ExtendItem, signal: AbortSignal): Promise<Date | null> {
    signal.throwIfAborted();
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ ...item, signal, resolve, reject });
    });
  }

  private flush(): void {
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
