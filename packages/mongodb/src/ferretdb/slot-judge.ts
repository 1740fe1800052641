import type { CallContext } from '@holdfast/core/backend';
import { LOCKED, type SlotHolder } from '../documents.js';
import type { ExpiryCheck } from '../expiry-check.js';

/**
 * Which holders of a holder list (a semaphore's slots, a read-write lock's grants) may still hold,
 * and when another look could free one.
 */
export interface SlotVerdict {
  readonly live: SlotHolder[];
  readonly expired: SlotHolder[];
  /** Local time from which another observation could find a live holder expired; undefined when all are expired. */
  readonly judgeableAt: number | undefined;
}

/**
 * MongoDB's expiry rule applied to each holder of a holder list as to a lock holder (../expiry.ts): a
 * holder is expired only when two observations a lease apart on the server's clock find its
 * process's ping (or, unrenewed, its last extend) and its ts unchanged. Each holder is observed
 * under a name of its own; names of holders that left are forgotten at the key's next judgement.
 * Until the earliest moment one of them could be found expired, nobody is read again: skipping an
 * observation never shortens the rule (a ping or ts that changed in between is seen at the next
 * one), it only spares every waiter's retry the reads of every holder's ping.
 */
export class SlotJudge {
  private readonly observed = new Map<string, Set<string>>();
  /** Per holder name: local time before which an observation cannot find it expired. */
  private readonly notBefore = new Map<string, number>();

  constructor(private readonly expiry: ExpiryCheck) {}

  async judge(key: string, holders: readonly SlotHolder[], call: CallContext): Promise<SlotVerdict> {
    this.forgetLeavers(key, holders);
    const names = new Set(holders.map((holder) => nameOf(key, holder)));
    if (names.size > 0) this.observed.set(key, names);
    const waitUntil = Math.min(...[...names].map((name) => this.notBefore.get(name) ?? 0));
    if (Date.now() < waitUntil) return { live: [...holders], expired: [], judgeableAt: waitUntil };
    const verdicts = await Promise.all(
      holders.map((holder) => this.expiry.observe({ ...holder, _id: nameOf(key, holder), state: LOCKED }, call)),
    );
    const live: SlotHolder[] = [];
    const expired: SlotHolder[] = [];
    let judgeableAt: number | undefined;
    for (const [at, verdict] of verdicts.entries()) {
      if (verdict.expired) expired.push(holders[at]!);
      else {
        live.push(holders[at]!);
        this.notBefore.set(nameOf(key, holders[at]!), verdict.judgeableAt);
        judgeableAt = Math.min(judgeableAt ?? Infinity, verdict.judgeableAt);
      }
    }
    return { live, expired, judgeableAt };
  }

  private forgetLeavers(key: string, holders: readonly SlotHolder[]): void {
    const before = this.observed.get(key);
    if (!before) return;
    const now = new Set(holders.map((holder) => nameOf(key, holder)));
    for (const name of before) {
      if (now.has(name)) continue;
      this.expiry.forget(name);
      this.notBefore.delete(name);
    }
    this.observed.delete(key);
  }
}

function nameOf(key: string, holder: SlotHolder): string {
  return `${key}\u0000${holder.ts.toHexString()}`;
}
