import type { ChangeStream, Collection } from 'mongodb';
import type { WaitOptions } from '@holdfast/core/backend';
import { isChangeStreamUnsupported } from './driver-errors.js';
import type { LockDocument } from './documents.js';

/**
 * Wakes waiters when a lock document changes, through one change stream per provider instance where
 * the deployment has them (replica sets, sharded clusters). Detected on first use: FerretDB and
 * standalone mongod refuse `$changeStream`, and waiters then sleep the retry interval. Waiters wake at
 * the latest after the retry interval either way: a crashed holder's lock changes nothing, and only
 * a new attempt (with its expiry observation) can take it over.
 */
export class WakeUps {
  private readonly waiters = new Map<string, Set<() => void>>();
  private stream: ChangeStream<LockDocument> | undefined;
  private opening: Promise<void> | undefined;
  private supported: boolean | undefined;
  private closed = false;

  constructor(
    private readonly locks: Collection<LockDocument>,
    private readonly pollIntervalMs: number,
  ) {}

  /** True once a change stream is open; false once the server refused one; undefined before trying. */
  get changeStreams(): boolean | undefined {
    return this.supported;
  }

  async wait(key: string, { signal, timeoutMs }: WaitOptions): Promise<void> {
    if (this.supported !== false && !this.closed) await this.openOnce();
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        const set = this.waiters.get(key);
        set?.delete(done);
        if (set?.size === 0) this.waiters.delete(key);
        resolve();
      };
      const timer = setTimeout(done, Math.min(timeoutMs, this.pollIntervalMs));
      signal.addEventListener('abort', done, { once: true });
      let set = this.waiters.get(key);
      if (!set) this.waiters.set(key, (set = new Set()));
      set.add(done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.opening?.catch(() => undefined);
    await this.stream?.close().catch(() => undefined);
    for (const set of this.waiters.values()) for (const wake of [...set]) wake();
  }

  private openOnce(): Promise<void> {
    this.opening ??= this.open();
    return this.opening;
  }

  private async open(): Promise<void> {
    const stream = this.locks.watch<LockDocument>([{ $match: { operationType: { $in: ['update', 'replace', 'delete', 'insert'] } } }], {
      maxAwaitTimeMS: this.pollIntervalMs,
    });
    try {
      await stream.tryNext(); // sends the aggregate: this is where an unsupported server says so
    } catch (error) {
      await stream.close().catch(() => undefined);
      if (isChangeStreamUnsupported(error)) this.supported = false;
      else this.opening = undefined; // a transient failure: try again on the next wait
      return;
    }
    if (this.closed) {
      await stream.close().catch(() => undefined);
      return;
    }
    this.stream = stream;
    this.supported = true;
    void this.dispatch(stream);
  }

  private async dispatch(stream: ChangeStream<LockDocument>): Promise<void> {
    try {
      while (!this.closed) {
        const change = await stream.next();
        const key = 'documentKey' in change ? (change.documentKey as { _id: string })._id : undefined;
        for (const wake of [...(this.waiters.get(key ?? '') ?? [])]) wake();
      }
    } catch {
      // The stream broke (failover, close): the next wait opens a new one.
      if (!this.closed) {
        this.stream = undefined;
        this.opening = undefined;
      }
    }
  }
}
