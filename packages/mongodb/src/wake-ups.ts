import { type Busy, WaitList, type WaitOptions } from '@holdfast/core/backend';
import type { ChangeStream, Collection } from 'mongodb';
import { type Bound, bounded } from './bounded.js';
import type { LockDocument } from './documents.js';
import { isChangeStreamUnsupported } from './driver-errors.js';
import type { MongoWake } from './grant-pass.js';
import { KeyWatch } from './key-watch.js';
import type { LockCatalog } from './lock-catalog.js';

/**
 * Wakes waiters when a lock document changes, through one change stream per provider instance where
 * the deployment has them (replica sets, sharded clusters). Detected on first use: FerretDB and
 * standalone mongod refuse `$changeStream`, and the documents of the keys waited on are then read
 * every 10 to 100 ms instead (key-watch.ts). Waiters wake at the latest after the poll interval either
 * way, and when the busy answer says a takeover could be judged: a crashed holder's lock changes
 * nothing, and only a new attempt (with its expiry observation) can take it over.
 */
export class WakeUps {
  private readonly waiters = new WaitList<string>();
  private readonly watch: KeyWatch;
  private stream: ChangeStream<LockDocument> | undefined;
  private opening: Promise<void> | undefined;
  private supported: boolean | undefined;
  private closed = false;

  private readonly locks: Collection<LockDocument>;

  constructor(
    catalog: LockCatalog,
    private readonly pollIntervalMs: number,
    commandTimeoutMs: number,
  ) {
    this.locks = catalog.locks;
    this.watch = new KeyWatch(
      catalog,
      (key) => this.waiters.wakeAll(key),
      (key) => this.waiters.has(key),
      pollIntervalMs,
      commandTimeoutMs,
    );
  }

  async wait(key: string, busy: Busy<MongoWake>, { signal, timeoutMs }: WaitOptions): Promise<void> {
    // Opened in the background: a change before the stream is open is caught by the poll.
    if (this.supported !== false && !this.closed) this.opening ??= this.open().catch(() => void (this.opening = undefined));
    const judgeableIn = (busy.wake?.judgeableAt ?? Infinity) - Date.now();
    // Before this waiter joins: a view that differs from the other waiters' wakes them, not it.
    if (this.supported !== true && busy.wake && !signal.aborted) this.watch.watch(key, busy.wake.holder);
    const pollMs = this.pollIntervalMs * (this.supported === true ? 1 : this.watch.patience(key));
    await this.waiters.wait(key, { signal, timeoutMs: Math.max(0, Math.min(timeoutMs, pollMs, judgeableIn)) });
  }

  /** A waiter of this provider got the key (see KeyWatch.granted). */
  granted(key: string): void {
    this.watch.granted(key);
  }

  /**
   * Bounded by `bound` (close's deadline), never by a command's own timeout: a key poll in flight is
   * aborted, and a change stream still opening or closing is left to the client's close (open()
   * closes a stream that opens after this).
   */
  async close(bound: Bound): Promise<void> {
    this.closed = true;
    this.waiters.wakeEveryone();
    await this.watch.stop(bound).catch(() => undefined);
    await bounded(bound, this.opening ?? Promise.resolve()).catch(() => undefined);
    await bounded(bound, this.stream?.close() ?? Promise.resolve()).catch(() => undefined);
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
        if ('documentKey' in change) this.waiters.wakeAll((change.documentKey as { _id: string })._id);
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
