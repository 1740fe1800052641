import type { CallContext, GrantOutcome, GrantRequest } from '@holdfast/core/backend';
import type { EtcdContext, EtcdWake } from './context.js';
import { deleteIfCreatedAt } from './kv.js';

/**
 * In this protocol a queued entry is a claim: once it is the oldest it holds the key, for every
 * client, whether or not its waiter still waits. Core removes a place with leaveQueue, in the
 * background, after the caller already has its answer; a release right after an abort could then
 * hand the key to an entry nobody waits for. So an attempt or a wait that ends with its caller's
 * signal aborted deletes its place's entry at once (leaveQueue still runs and finds it gone).
 */
export function leaveNow(ctx: EtcdContext, placeId: string): void {
  const entry = ctx.places.get(placeId);
  if (!entry) return;
  ctx.places.delete(placeId);
  deleteIfCreatedAt(ctx.rpc, entry.key, entry.createRevision, ctx.background()).catch(() => undefined);
}

/** One attempt that remembers its place's entry, and gives it up at once if the caller left. */
export async function attemptWithPlace(
  ctx: EtcdContext,
  request: GrantRequest,
  call: CallContext,
  attempt: () => Promise<GrantOutcome<EtcdWake>>,
): Promise<GrantOutcome<EtcdWake>> {
  const place = request.place;
  if (!place) return attempt();
  try {
    const outcome = await attempt();
    if (outcome.granted) ctx.places.delete(place.id);
    else if (outcome.wake?.entry) ctx.places.set(place.id, outcome.wake.entry);
    if (call.signal.aborted) leaveNow(ctx, place.id);
    return outcome;
  } catch (error) {
    if (call.signal.aborted) leaveNow(ctx, place.id);
    throw error;
  }
}
