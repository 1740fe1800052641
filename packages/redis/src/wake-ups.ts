import { WaitList, type WaitOptions } from '@holdfast/core/backend';

/** What a busy answer tells the wait that follows it. */
export interface WakeHint {
  /** The wake-ups' message count when the attempt was sent: a release seen after it was missed by no one. */
  readonly since: number;
  /** The attempt was a woken waiter's, and it lost the race: it keeps its turn among the local waiters. */
  readonly woken: boolean;
  /** The longest a majority of nodes may still take to have the key free, in ms (Infinity: unknown). */
  readonly freeInMs: number;
}

/** Busy: the longest a majority of nodes may still take to have the key free (Infinity: unknown). */
export interface Refusal {
  readonly freeInMs: number;
}

/** Margin after a holder's lease before re-checking, so the key has certainly expired on the server. */
const EXPIRY_MARGIN_MS = 5;
/** Release messages remembered for attempts in flight; older ones count as possibly missed. */
const REMEMBERED_RELEASES = 1024;

/**
 * The key's waiters were handed one release: 'woken' until the woken waiter tries again, 'trying'
 * while that attempt is in flight. Further releases meanwhile wake nobody else (the attempt sees
 * them), unless the attempt takes a semaphore slot: then each freed another slot (see `passed`).
 */
type Baton = 'woken' | 'trying';

/**
 * One provider's waiters, per key, woken one at a time. A release frees the key for one
 * contender, so it wakes the longest-waiting local waiter only, and wakes the next only when that
 * one gave up without trying; one that tried and lost (to another provider or a newcomer) waits
 * again ahead of the others, and the winner's release wakes it. A semaphore's release frees one
 * slot: releases that came while a woken waiter was trying wake one more waiter each once it took
 * a slot. What can go missing is covered: a release seen while an attempt was in flight is
 * remembered for the wait that follows it; a (re)started subscription wakes one waiter per key; and
 * a per-key timer (not per waiter) wakes one waiter when the holder's lease runs out (expiries
 * publish nothing) or after `pollIntervalMs`, whichever comes first.
 */
export class WakeUps {
  private readonly waiters = new WaitList<string>();
  /** Woken waiters that lost the race to another provider or a newcomer: they are woken first. */
  private readonly retrying = new WaitList<string>();
  private readonly batons = new Map<string, Baton>();
  /** Key -> releases that came while its baton was out: with a semaphore each freed one more slot. */
  private readonly passed = new Map<string, number>();
  private readonly polls = new Map<string, { readonly at: number; readonly timer: NodeJS.Timeout }>();
  /** Key -> message count of its last release that woke nobody. */
  private readonly unclaimed = new Map<string, number>();
  private forgottenUpTo = 0;
  private messages = 0;
  private listeningSince = 0;
  private closed = false;

  constructor(private readonly pollIntervalMs: number) {}

  /** Called as an attempt on `key` is sent; its busy answer carries what this returns to the wait. */
  attemptStarted(key: string): Pick<WakeHint, 'since' | 'woken'> {
    const woken = this.batons.get(key) === 'woken';
    if (woken) this.batons.set(key, 'trying');
    return { since: this.messages, woken };
  }

  /**
   * `tookSlot`: the attempt took a semaphore slot. A release that came while it was in flight then
   * freed another slot, for the next local waiter; after a plain lock's grant the key is busy again.
   */
  attemptEnded(key: string, tookSlot = false): void {
    if (this.batons.get(key) !== 'trying') return;
    this.batons.delete(key);
    const passed = this.passed.get(key) ?? 0;
    this.passed.delete(key);
    if (tookSlot && passed > 0 && this.wakeOne(key) && passed > 1) this.passed.set(key, passed - 1);
  }

  /** Resolves when this waiter is woken, the key's timer or `options.timeoutMs` runs out, or the signal aborts. */
  async wait(key: string, hint: WakeHint, options: WaitOptions): Promise<void> {
    if (this.closed || this.missed(key, hint.since)) return;
    this.schedulePoll(key, hint.freeInMs);
    await (hint.woken ? this.retrying : this.waiters).wait(key, options);
    if (!this.hasWaiters(key)) this.stopPoll(key);
  }

  /** A lock was released (or deleted, or expired) on a server. */
  released(key: string): void {
    this.messages++;
    const baton = this.batons.get(key);
    if (baton !== undefined) this.passed.set(key, (this.passed.get(key) ?? 0) + 1);
    // A woken waiter that has not tried yet will see this release; one trying may not have.
    if (baton === 'woken') return;
    if (baton === undefined && this.wakeOne(key)) return;
    this.remember(key);
  }

  /** A subscription became active: releases before it may have been missed. */
  listening(): void {
    this.listeningSince = ++this.messages;
    this.wakeOnePerKey();
  }

  /** A subscription dropped: the server may have restarted and forgotten the keys waited on. */
  dropped(): void {
    this.wakeOnePerKey();
  }

  close(): void {
    this.closed = true;
    for (const key of [...this.polls.keys()]) this.stopPoll(key);
    this.retrying.wakeEveryone();
    this.waiters.wakeEveryone();
  }

  /** Whether a release since the attempt was sent may have gone unseen by everyone; consumes it. */
  private missed(key: string, since: number): boolean {
    if (since < this.listeningSince) return true;
    const seen = this.unclaimed.get(key);
    if (seen === undefined) return since < this.forgottenUpTo;
    if (seen <= since) return false;
    this.unclaimed.delete(key);
    return true;
  }

  private hasWaiters(key: string): boolean {
    return this.retrying.has(key) || this.waiters.has(key);
  }

  private wakeOne(key: string): boolean {
    if (!this.retrying.wakeFirst(key, () => undefined) && !this.waiters.wakeFirst(key, () => undefined)) return false;
    this.batons.set(key, 'woken');
    // Core tries again within the same turn of the event loop unless the waiter gave up (its
    // deadline or abort came with the wake): then the release passes to the next waiter.
    setImmediate(() => {
      if (this.batons.get(key) !== 'woken') return;
      this.batons.delete(key);
      // The next waiter inherits the releases this one let pass.
      if (this.closed || !this.wakeOne(key)) this.passed.delete(key);
    });
    return true;
  }

  private wakeOnePerKey(): void {
    const keys = new Set([...this.retrying.keys(), ...this.waiters.keys()]);
    for (const key of keys) if (!this.batons.has(key)) this.wakeOne(key);
  }

  private remember(key: string): void {
    this.unclaimed.delete(key);
    this.unclaimed.set(key, this.messages);
    if (this.unclaimed.size <= REMEMBERED_RELEASES) return;
    const [oldest, count] = this.unclaimed.entries().next().value!;
    this.unclaimed.delete(oldest);
    this.forgottenUpTo = count;
  }

  private schedulePoll(key: string, freeInMs: number): void {
    const at = Date.now() + Math.min(this.pollIntervalMs, freeInMs + EXPIRY_MARGIN_MS);
    const current = this.polls.get(key);
    if (current && current.at <= at) return;
    if (current) clearTimeout(current.timer);
    this.polls.set(key, { at, timer: setTimeout(() => this.pollDue(key), at - Date.now()) });
  }

  private pollDue(key: string): void {
    this.polls.delete(key);
    if (!this.batons.has(key)) this.wakeOne(key);
    if (this.hasWaiters(key)) this.schedulePoll(key, Infinity);
  }

  private stopPoll(key: string): void {
    clearTimeout(this.polls.get(key)?.timer);
    this.polls.delete(key);
  }
}
