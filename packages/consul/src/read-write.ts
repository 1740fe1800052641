import type { CallContext, GrantOutcome, ModeRequest } from '@holdfast/core/backend';
import { READ_WRITE_FLAG, READ_WRITE_LIMIT } from './constants.js';
import type { GrantContext } from './grant.js';
import type { AcquireSettings, ConsulWake } from './lock.js';
import { claimPlace } from './semaphore.js';
import { type SemaphorePlace, type SemaphoreState, semaphorePlace } from './semaphore-record.js';

/*
 * A read-write lock is the semaphore's protocol (semaphore.ts: a contender entry per holder, held by
 * the holder's own session, and the coordination record `<prefix>/<key>/.lock` changed only by
 * check-and-set) with each holder's mode beside it in the record ({"Modes": {"<session>": "shared"}})
 * and its own KV flags (READ_WRITE_FLAG), so no semaphore, Holdfast's or Go's, takes it for its own.
 * Whether a claim may enter is decided on the record it check-and-sets, so a reader and a writer that
 * race both write the same record version and one of them fails. The token is the record's new
 * ModifyIndex, the transaction's Raft index: strictly increasing across every write of the cluster,
 * so across the key's readers, writers, slots and plain locks. Consul keeps no line of waiters, so a
 * stream of readers may keep a writer out (no `writerPreferred`).
 */

export function readWritePlace(prefix: string, key: string): SemaphorePlace {
  return semaphorePlace(prefix, key, READ_WRITE_FLAG);
}

/** A writer enters only when no holder is left; a reader when no live holder writes. */
export function admits(mode: ModeRequest['mode'], state: SemaphoreState): boolean {
  if (mode === 'exclusive') return state.holders.length === 0;
  return state.holders.every((session) => state.modes.get(session) === 'shared');
}

/** One attempt at a reader's or the writer's grant (the steps of tryGrantSlot). */
export function tryGrantMode(
  context: GrantContext,
  settings: AcquireSettings,
  request: ModeRequest,
  call: CallContext,
): Promise<GrantOutcome<ConsulWake>> {
  const place = readWritePlace(settings.prefix, request.key);
  const { mode } = request;
  return claimPlace(context, settings, request, call, { place, limit: READ_WRITE_LIMIT, mode, admits: (state) => admits(mode, state) });
}
