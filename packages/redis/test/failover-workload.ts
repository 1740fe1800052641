import type { Lock, LockProvider } from '@holdfast/core';

/** What a workload saw across a fault, through its fenced store. */
export interface FailoverTally {
  grants: number;
  /** A key granted while another holder of it, still within its lease by its own handle's reckoning, had not been told it lost the lock. */
  doubleGrants: number;
  /**
   * A key granted after another holder's lease had ended by its own reckoning, but before its signal
   * aborted: the holder's timer ran late (a loaded machine), not the server granting twice.
   */
  toldLate: number;
  /** A grant whose token was not above every token granted for its key before. */
  tokenRegressions: number;
  /** Writes the fenced store refused (a token below one it had accepted): a stale holder stopped by the fence. */
  fencedRefusals: number;
  /** Holders told (signal aborted) while they held. */
  told: number;
  /** Acquires that failed with an error (BackendError during the fault): liveness, not safety. */
  failedAcquires: number;
}

/**
 * Contenders on `keys` through several providers (each a process, as far as the backend knows):
 * each takes a key, writes to a fenced store a few times while it holds, releases, and goes again.
 * The store keeps, per key, the highest token it accepted and who holds the key now (granted and
 * not yet told or released), so that overlapping holders and falling tokens are counted as they happen.
 */
export class FailoverWorkload {
  readonly tally: FailoverTally = {
    grants: 0,
    doubleGrants: 0,
    toldLate: 0,
    tokenRegressions: 0,
    fencedRefusals: 0,
    told: 0,
    failedAcquires: 0,
  };
  private readonly highestToken = new Map<string, bigint>();
  private readonly highestWritten = new Map<string, bigint>();
  private readonly holders = new Map<string, Set<Lock>>();
  private running = true;
  private readonly loops: Promise<void>[] = [];

  constructor(
    private readonly providers: readonly LockProvider[],
    private readonly keys: readonly string[],
    private readonly ttlMs: number,
    private readonly holdMs: number,
  ) {}

  start(contendersPerKey: number): void {
    this.keys.forEach((key, k) => {
      for (let i = 0; i < contendersPerKey; i++) this.loops.push(this.contend(key, this.providers[(k + i) % this.providers.length]!));
    });
  }

  async stop(): Promise<FailoverTally> {
    this.running = false;
    await Promise.all(this.loops);
    return this.tally;
  }

  private async contend(key: string, provider: LockProvider): Promise<void> {
    while (this.running) {
      let lock: Lock;
      try {
        lock = await provider.acquire(key, { ttlMs: this.ttlMs, waitMs: 3000 });
      } catch {
        this.tally.failedAcquires++;
        await sleep(50);
        continue;
      }
      this.granted(key, lock);
      const end = Date.now() + this.holdMs;
      while (Date.now() < end && !lock.signal.aborted) {
        this.write(key, lock.token);
        await sleep(10);
      }
      this.holders.get(key)?.delete(lock);
      if (lock.signal.aborted) this.tally.told++;
      await lock.release().catch(() => undefined);
    }
  }

  private granted(key: string, lock: Lock): void {
    this.tally.grants++;
    const holding = this.holders.get(key) ?? new Set<Lock>();
    this.holders.set(key, holding);
    for (const other of holding) {
      if (other.signal.aborted) continue;
      if (other.expiresAt !== null && other.expiresAt.getTime() <= Date.now()) this.tally.toldLate++;
      else this.tally.doubleGrants++;
    }
    holding.add(lock);
    lock.signal.addEventListener('abort', () => holding.delete(lock), { once: true });
    const highest = this.highestToken.get(key);
    if (highest !== undefined && lock.token <= highest) this.tally.tokenRegressions++;
    if (highest === undefined || lock.token > highest) this.highestToken.set(key, lock.token);
  }

  /** The fenced store: a write with a token below the highest it accepted for the key is refused. */
  private write(key: string, token: bigint): void {
    const highest = this.highestWritten.get(key);
    if (highest !== undefined && token < highest) {
      this.tally.fencedRefusals++;
      return;
    }
    this.highestWritten.set(key, token);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
