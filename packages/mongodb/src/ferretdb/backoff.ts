import { sleep } from '@holdfast/core/backend';

/**
 * The pause before retry `attempt` (from 1) of a write that FerretDB's other writers got in the way
 * of (SQLITE_BUSY, a lost version race): random, so that the writers of a busy key spread out, and
 * growing up to 100 ms.
 */
export function backoff(attempt: number, signal?: AbortSignal): Promise<void> {
  return sleep(Math.random() * Math.min(3 * 2 ** attempt, 100), signal);
}
