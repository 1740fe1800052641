import type { ObjectId } from 'mongodb';
import type { ServerInfo } from './server-info.js';

/** What a contender saw of a held lock at one moment, on the server's clock. */
export interface Observation {
  readonly process: string;
  /** The holder's ping (epoch when missing); null for a lock its process ping does not keep alive. */
  readonly ping: Date | null;
  readonly ts: ObjectId;
  /** The last explicit extend, and the lease it set: a change is a sign of life like a new ping. */
  readonly extended: Date | null;
  readonly lease: number;
}

interface Recorded {
  readonly observation: Observation;
  readonly electionId: string | undefined;
  readonly serverTime: number;
}

/**
 * MongoDB's isLockExpired, with the lease taken from the lock document. Per key, the last
 * observation is kept; a lock is expired only when a later observation, at least `lease` ms later
 * on the server's clock (corrected by half the round trip), finds ping, ts, extend and electionId
 * all unchanged. The local clock is never consulted.
 */
export class PingHistory {
  private readonly recorded = new Map<string, Recorded>();

  /** Records the observation; the ms left until a later one could find the lock expired (<= 0: expired now). */
  observe(key: string, seen: Observation, server: ServerInfo, roundTripMs: number): number {
    const previous = this.recorded.get(key);
    const now: Recorded = { observation: seen, electionId: server.electionId, serverTime: server.serverTime.getTime() };
    if (!previous || changed(previous, now)) {
      this.recorded.set(key, now);
      return seen.lease;
    }
    // Be conservative: the server read its clock somewhere within the round trip.
    const correctedTime = now.serverTime - roundTripMs / 2;
    // The server's clock went backwards: wait for it to pass the recorded time again.
    if (correctedTime < previous.serverTime) return previous.serverTime - correctedTime + seen.lease;
    return seen.lease - (correctedTime - previous.serverTime);
  }

  forget(key: string): void {
    this.recorded.delete(key);
  }
}

function changed(previous: Recorded, now: Recorded): boolean {
  const a = previous.observation;
  const b = now.observation;
  return (
    a.process !== b.process ||
    a.ping?.getTime() !== b.ping?.getTime() ||
    !a.ts.equals(b.ts) ||
    a.extended?.getTime() !== b.extended?.getTime() ||
    a.lease !== b.lease ||
    previous.electionId !== now.electionId
  );
}
