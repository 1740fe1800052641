import type { Election, Leadership, LockProvider } from '@holdfast/core';
import { abortTime } from '../helpers/index.js';
import { FencedResource } from './fencing.js';
import { delay } from './support.js';

export interface Term {
  readonly owner: string;
  readonly token: bigint;
  readonly startedAt: number;
  /** When the term's signal aborted (performance.now()), once it has. */
  readonly abortedAt: () => number | undefined;
}

/**
 * The terms of one key's candidates, as the election cases (76, F7) judge them: each term's work
 * writes to a fenced store while its signal says it leads; a term that starts while another still
 * runs is an overlap, a write the store refuses a stale one.
 */
export class TermLog {
  readonly terms: Term[] = [];
  readonly overlaps: string[] = [];
  readonly refused: string[] = [];
  private readonly store = new FencedResource();

  constructor(
    private readonly key: string,
    private readonly ttlMs: number,
  ) {}

  candidate(locks: LockProvider): Election {
    return locks.elect(
      this.key,
      async ({ token, signal }: Leadership) => {
        const startedAt = performance.now();
        for (const other of this.terms) {
          if (other.abortedAt() === undefined) this.overlaps.push(`term ${token} of ${locks.owner} started while term ${other.token} ran`);
        }
        this.terms.push({ owner: locks.owner, token, startedAt, abortedAt: abortTime(signal) });
        // The work writes as long as its signal says it leads: a stale write is one the store refuses.
        while (!signal.aborted) {
          if (!this.store.write(token, locks.owner)) this.refused.push(`a write of term ${token} was refused: a newer term had written`);
          await delay(5);
        }
      },
      { retryDelayMs: 10, ttlMs: this.ttlMs },
    );
  }
}
