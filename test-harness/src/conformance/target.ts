import type { LockProvider } from '@holdfast/core';
import type { FaultHooks, NoFaultHooks } from '../faults/hooks.js';

/** What an adapter author hands the conformance suite. */
export interface ConformanceTarget {
  /** Suite title, e.g. "redis (single node)". */
  readonly name: string;
  /**
   * A new, independent provider instance connected to the same backend. Instances stand for
   * processes: locks taken through one must exclude the others. The suite closes every instance.
   */
  createProvider(): Promise<LockProvider> | LockProvider;
  /**
   * Builds a provider inside a child process, for the SIGKILL crash case: a URL that
   * `createLockProvider()` understands, or the path of a compiled JavaScript ES module (.js/.mjs:
   * the child is plain Node 20, which cannot load .ts) whose `createProvider()` export is
   * called. Without it (or for backends that are not cross-process) the case is skipped with a reason.
   */
  readonly child?: { readonly url: string } | { readonly module: string };
  /**
   * A provider whose backend is unreachable (a closed port, a stopped server), for the "backend
   * failed is not busy" case. Without it the case is skipped with a reason.
   */
  createUnreachableProvider?(): Promise<LockProvider> | LockProvider;
  /**
   * For the cross-process fault cases (stalled grab through a proxy, hung server, paused holder,
   * cut connection): the server's loopback address and a way to build a provider at another
   * address. `{ unsupported: reason }` or nothing skips them with a reason.
   */
  readonly faults?: FaultHooks | NoFaultHooks;
  /**
   * How many locks one test may hold at once, where each held lock costs a scarce resource (PostgreSQL
   * session mode: a server connection per lock). The listing case that holds more keys than one scan
   * page is skipped, with this reason, when that many cannot be held. Default: no limit.
   */
  readonly heldLocksLimit?: { readonly max: number; readonly reason: string };
  /**
   * Where a plain-lock holder learns of a forced release by another instance only at its next renewal
   * or check (ttl/3: no notification reaches it), say so with the reason: the election case for a
   * force-released leader then requires its work stopped within that renewal bound and its stale writes
   * refused by the fence, instead of stopped before the next term starts. Default: told before anyone
   * else can be granted.
   */
  readonly forcedReleaseToldAtRenewal?: { readonly reason: string };
  /**
   * How many keys the backend's list() reads per page or batch: Redis scans and pipelines 1,000, a
   * MongoDB cursor's first batch is 101. The listing case for paging holds 1.5 times as many keys
   * (and at least 150), so that each listing spans a page boundary. Default 1000.
   */
  readonly listPageSize?: number;
  /**
   * How many waits the backend holds open now for this target's providers: the subscriptions,
   * watches or listeners a waiting acquire or an observe() registers, which one that forgot to end
   * would leave behind (a timer shows in the timer check; these do not). Counted the same way each
   * time, so a fixed share of the backend's own is fine. With it, case 77 checks that an observe()
   * ended by its signal or by close() leaves the count where it was; without it, timers only.
   */
  openWaits?(): Promise<number> | number;
  /** TTL for the expiry cases, in ms. Default: max(capabilities.minTtlMs, 600). */
  readonly shortTtlMs?: number;
  /** How soon a waiter must hold the lock after a release, in ms. Default 1500. */
  readonly promptWakeMs?: number;
  /** Extra slack for every timing bound, in ms (slow backends, loaded machines). Default 1000. */
  readonly slackMs?: number;
  /**
   * How soon the unreachable-backend fixture must report a BackendError, in ms. Default slackMs + 500.
   * Raise it only for a fixture that cannot fail faster (a driver's fixed server-selection time).
   */
  readonly unreachableFailsWithinMs?: number;
}

export interface ResolvedTiming {
  readonly shortTtlMs: number;
  readonly promptWakeMs: number;
  readonly slackMs: number;
  readonly graceMs: number;
  /** Bound for any single call of a case (2 x slackMs + promptWakeMs): a hanging call fails its case with this. */
  readonly callMs: number;
  /** Bound for the unreachable fixture's BackendError. */
  readonly unreachableMs: number;
}
