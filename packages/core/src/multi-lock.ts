import { LockReleasedError } from './errors.js';
import type { Lock, MultiLock } from './types.js';

/**
 * One handle over the locks of several keys (taken by MultiKeyTaker): each key keeps its own lock,
 * renewal and token; this handle's signal aborts as soon as any of them ends, with that key's reason.
 */
export class HeldKeys implements MultiLock {
  readonly keys: readonly string[];
  readonly locks: ReadonlyMap<string, Lock>;
  readonly tokens: ReadonlyMap<string, bigint>;
  readonly owner: string;
  private readonly controller = new AbortController();
  private readonly detach: (() => void)[] = [];
  private released: Promise<void> | undefined;

  /** `locks`: one per key, in the order they were taken. */
  constructor(locks: readonly Lock[]) {
    this.keys = locks.map((lock) => lock.key);
    this.locks = new Map(locks.map((lock) => [lock.key, lock]));
    this.tokens = new Map(locks.map((lock) => [lock.key, lock.token]));
    this.owner = locks[0]!.owner;
    for (const lock of locks) {
      // The first key to end decides the reason: a LockLostError that names it, or its release.
      const onEnd = (): void => this.controller.abort(lock.signal.reason);
      if (lock.signal.aborted) onEnd();
      else {
        lock.signal.addEventListener('abort', onEnd, { once: true });
        this.detach.push(() => lock.signal.removeEventListener('abort', onEnd));
      }
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get expiresAt(): Date | null {
    let earliest: Date | null = null;
    for (const lock of this.locks.values()) {
      if (lock.expiresAt !== null && (earliest === null || lock.expiresAt < earliest)) earliest = lock.expiresAt;
    }
    return earliest;
  }

  async extend(ttlMs?: number): Promise<void> {
    const results = await Promise.allSettled([...this.locks.values()].map((lock) => lock.extend(ttlMs)));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  release(): Promise<void> {
    this.released ??= this.releaseAll();
    return this.released;
  }

  async isHeld(): Promise<boolean> {
    const held = await Promise.all([...this.locks.values()].map((lock) => lock.isHeld()));
    return held.every(Boolean);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Every key is released even when one fails: a failure must not keep the others from the next holder. */
  private async releaseAll(): Promise<void> {
    // Our own release is not a loss: the signal says "released" for all keys, not the first key's release.
    for (const detach of this.detach) detach();
    const results = await Promise.allSettled([...this.locks.values()].map((lock) => lock.release()));
    const failed = results.find((result) => result.status === 'rejected');
    if (failed) {
      const lock = [...this.locks.values()][results.indexOf(failed)]!;
      this.controller.abort(lock.signal.reason);
      throw failed.reason;
    }
    this.controller.abort(new LockReleasedError(this.keys.join(', ')));
  }
}
