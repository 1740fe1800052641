import type { LockInfo } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Db } from 'mongodb';
import type { SlotHolder } from '../documents.js';
import type { PingStore } from '../ping-store.js';
import type { ServerInfoReader } from '../server-info.js';
import { isReadWriteState } from './key-use.js';
import type { SlotCatalog } from './slot-catalog.js';
import { isSlotState, type SlotState } from './slot-state.js';

export interface SlotHolderParts {
  readonly db: Db;
  readonly slots: SlotCatalog;
  readonly pings: PingStore;
  readonly readServerInfo: ServerInfoReader;
}

/** Which holder lists a listing reads, and what each holder's LockInfo adds in `details`. */
interface HolderListing {
  shows(state: SlotState): boolean;
  detailsOf(state: SlotState, holder: SlotHolder): Record<string, unknown>;
}

const SEMAPHORES: HolderListing = {
  shows: (state) => !isReadWriteState(state),
  detailsOf: (state) => ({ limit: state.limit }),
};

const READ_WRITE_LOCKS: HolderListing = {
  shows: isReadWriteState,
  detailsOf: (_state, holder) => ({ mode: holder.mode }),
};

/** The holders of a semaphore's slots, oldest grant first, judged as holderInfos() says. */
export function slotHolderInfos(parts: SlotHolderParts, key: string, call: CallContext): Promise<LockInfo[]> {
  return holderInfos(parts, key, SEMAPHORES, call);
}

/** The holders of a read-write lock, oldest grant first, judged as holderInfos() says, each with its `mode`. */
export function modeHolderInfos(parts: SlotHolderParts, key: string, call: CallContext): Promise<LockInfo[]> {
  return holderInfos(parts, key, READ_WRITE_LOCKS, call);
}

/**
 * The holders of the key's holder list when `listing` shows it, each judged on the server's clock as
 * inspect() judges a lock holder (../inspection.ts): renewed by pings, held while its process's last
 * ping is younger than its lease; otherwise until its lease after its take or last extend.
 */
async function holderInfos(parts: SlotHolderParts, key: string, listing: HolderListing, call: CallContext): Promise<LockInfo[]> {
  const { current } = await parts.slots.head(key, call);
  if (!isSlotState(current) || !listing.shows(current) || current.holders.length === 0) return [];
  const processes = [...new Set(current.holders.map((holder) => holder.process))];
  const [pings, server] = await Promise.all([parts.pings.getPings(processes, call), parts.readServerInfo(parts.db, call.signal)]);
  const now = server.serverTime.getTime();
  return current.holders
    .filter((holder) => now < endOf(holder, pings.get(holder.process)))
    .sort((a, b) => a.fence - b.fence)
    .map((holder) => holderInfo(key, holder, listing.detailsOf(current, holder), pings.get(holder.process) ?? null));
}

function endOf(holder: SlotHolder, lastPing: Date | undefined): number {
  if (!holder.renew) return (holder.extended ?? holder.when).getTime() + holder.lease;
  return (lastPing?.getTime() ?? -Infinity) + holder.lease;
}

function holderInfo(key: string, holder: SlotHolder, details: Record<string, unknown>, lastPing: Date | null): LockInfo {
  const owner = holder.who.startsWith(`${holder.process}:`) ? holder.who.slice(holder.process.length + 1) : holder.who;
  return {
    key,
    owner,
    reason: holder.why === '' ? undefined : holder.why,
    acquiredAt: holder.when,
    expiresAt: holder.renew ? null : new Date((holder.extended ?? holder.when).getTime() + holder.lease),
    token: BigInt(holder.fence),
    details: {
      ...details,
      process: holder.process,
      who: holder.who,
      ts: holder.ts.toHexString(),
      lease: holder.lease,
      renewedByPings: holder.renew,
      lastPing: lastPing?.toISOString() ?? null,
    },
  };
}
