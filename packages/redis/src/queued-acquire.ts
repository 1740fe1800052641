import { randomUUID } from 'node:crypto';
import { ErrorCode, HoldfastError } from '@holdfast/core';
import { type GrantRequest, linkedController, MAX_TIMER_MS, type QueuedWait, safetyDeadline, toBackendError } from '@holdfast/core/backend';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { LEAVE_QUEUE } from './queue-scripts.js';
import type { QueuedWaiters } from './queued-waiters.js';
import { RedisGrant } from './redis-grant.js';
import { grantInTurn, QUEUE_ENTRY_TTL_MS } from './single-node-grant.js';
import { UNBOUNDED } from './until-aborted.js';

/**
 * How often a queued waiter refreshes its place (and tries again), at most: a quarter of its
 * entry's life, so a live waiter does not lapse, and a dead one at the head delays the next by at
 * most its entry's life plus one refresh: min(2 s, TTL / 2) + min(0.5 s, a quarter of that).
 */
export const QUEUE_REFRESH_MS = 500;
/** The shortest life of a queue entry (for leases of less than twice this). */
const MIN_ENTRY_TTL_MS = 100;
/** Margin after a holder's lease before the next in line tries, so the key has certainly expired on the server. */
const EXPIRY_MARGIN_MS = 5;
const MAX_RETRY_DELAY_MS = 1000;
const FIRST_RETRY_DELAY_MS = 50;

/**
 * A plain lock's wait on one server, in the key's server-side queue: the waiter's entry is added by
 * its first attempt and refreshed by each later one; a release names the next waiter, so only that
 * waiter tries. Between messages a waiter tries every QUEUE_REFRESH_MS (refreshing its place), the
 * next in line also every `pollIntervalMs` if that is shorter (in case the message naming it was
 * missed) and when the holder's lease runs out (expiries publish nothing). Keeps core's
 * guarantees itself, as core hands it the whole wait: backend failures are retried until the
 * deadline (then thrown), an abort rejects with its reason, a grant whose reply may have been
 * lost is undone, a grant that came back after its lease ran out is released, and the entry is
 * removed whenever the wait ends without a grant.
 */
export async function acquireInQueue(
  nodes: NodeSet,
  keys: LockKeys,
  waiters: QueuedWaiters,
  request: GrantRequest,
  { signal, deadline, pollIntervalMs, onWaiting }: QueuedWait & { pollIntervalMs: number },
): Promise<RedisGrant | null> {
  // A dead waiter must not hold up the next one longer than a dead holder would (its lease).
  const entryTtlMs = Math.min(QUEUE_ENTRY_TTL_MS, Math.max(MIN_ENTRY_TTL_MS, request.ttlMs / 2));
  const refreshMs = Math.min(QUEUE_REFRESH_MS, entryTtlMs / 4);
  // Only the next in line can be granted; the others' attempts just keep their place, and cost the
  // server one script per waiter per period whatever the grant rate.
  const headCheckMs = Math.min(refreshMs, pollIntervalMs);
  const waiter = waiters.waiterFor(request.key, request.lockId);
  waiters.add(waiter);
  let attempt = request;
  let lastError: unknown;
  let answered = false;
  /** An attempt found the key taken: the caller is told once that it waits. */
  let waiting = false;
  let failures = 0;
  let grant: RedisGrant | undefined;
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        if (lastError) throw lastError;
        return null;
      }
      waiter.armed();
      const sentAt = Date.now();
      let outcome: Awaited<ReturnType<typeof grantInTurn>>;
      // An attempt is cut at the deadline (grantInTurn undoes whatever it may have done).
      const bounded = linkedController(signal);
      // A wait without a limit (or one past setTimeout's range) has no cut: setTimeout would fire at once.
      const cut =
        remaining <= MAX_TIMER_MS ? setTimeout(() => bounded.controller.abort(new Error('the wait ran out')), remaining) : undefined;
      try {
        outcome = await grantInTurn(nodes, keys, attempt, bounded.controller.signal, {
          waiterId: waiter.waiterId,
          entryTtlMs: Math.min(entryTtlMs, remaining),
        });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (!isTransient(error)) throw error;
        const failure = toBackendError('redis', 'acquire', error);
        // Cut by the deadline after the server had answered "busy": a timeout; never answered: a failure.
        if (Date.now() >= deadline) {
          if (answered && !lastError) return null;
          throw lastError ?? failure;
        }
        // The attempt may have been applied (grantInTurn undoes it): the next one is another request.
        attempt = { ...attempt, lockId: randomUUID() };
        lastError = failure;
        failures++;
        await waiter.wait(Math.min(deadline - Date.now(), retryDelayMs(failures)), signal);
        continue;
      } finally {
        clearTimeout(cut);
        bounded.dispose();
      }
      answered = true;
      lastError = undefined;
      failures = 0;
      if (outcome instanceof RedisGrant) {
        if (signal.aborted) {
          void outcome.release({ signal: UNBOUNDED }).catch(() => undefined);
          throw signal.reason;
        }
        if (Date.now() >= safetyDeadline(sentAt, attempt.ttlMs)) {
          // The process or the network stalled longer than the lease: the lock may be someone else's already.
          void outcome.release({ signal: UNBOUNDED }).catch(() => undefined);
          attempt = { ...attempt, lockId: randomUUID() };
          continue;
        }
        grant = outcome;
        return outcome;
      }
      if (!waiting) onWaiting?.();
      waiting = true;
      waiter.atHead = outcome.atHead;
      const untilNext = outcome.atHead ? Math.min(headCheckMs, outcome.freeInMs + EXPIRY_MARGIN_MS) : refreshMs;
      await waiter.wait(Math.min(untilNext, deadline - Date.now()), signal);
    }
  } finally {
    // Granted: the grant removed the entry. Otherwise free the place at once (it would lapse anyway),
    // sent before the waiter is removed, so that close() quits behind it.
    if (!grant) void leave(nodes, keys, waiter.waiterId);
    waiters.remove(waiter);
  }
}

async function leave(nodes: NodeSet, keys: LockKeys, waiterId: string): Promise<void> {
  await nodes
    .ask(
      UNBOUNDED,
      'leave the queue',
      // EVAL, not EVALSHA: a server that does not know the script must not get it one round trip later, after QUIT.
      (client) => LEAVE_QUEUE.evaluate(client, [keys.queue, keys.queueExpiries, keys.lock], [waiterId, keys.channel]),
      // A server never reached has no entry of ours: close() need not wait for its first connection.
      { ifNeverConnected: 0 },
    )
    .catch(() => undefined);
}

function retryDelayMs(failures: number): number {
  return Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(failures - 1, 5));
}

/** Backend failures are worth retrying while the caller still waits; conflicts are not. */
function isTransient(error: unknown): boolean {
  return !(error instanceof HoldfastError) || error.code === ErrorCode.Backend;
}
