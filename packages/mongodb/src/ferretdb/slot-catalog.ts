import { BackendError } from '@holdfast/core';
import type { Db, ObjectId } from 'mongodb';
import type { Bound } from '../bounded.js';
import type { LockDocument, SlotHolder } from '../documents.js';
import type { Acquisition } from '../lock-catalog.js';
import type { ServerInfoReader } from '../server-info.js';
import { backoff } from './backoff.js';
import type { KeyUse } from './key-use.js';
import type { LockFields } from './records.js';
import { holderFor, isSlotState, type SlotState, slotStateFields } from './slot-state.js';
import type { ChainRead, VersionChain } from './version-chain.js';

/**
 * How long a change is re-read and retried while other writers keep moving the key (the call's own
 * bound, core's per-call timeout, usually ends it first). A count of attempts without pauses was
 * used up under nine read-write contenders on FerretDB, and a release then failed.
 */
const CHANGE_RETRY_MS = 5_000;

/** A committed state, with when the read it was based on began (what an unlock soon after may reuse). */
export type Committed = LockDocument & { readStartedAt: number };

/**
 * Holder lists on FerretDB (semaphores and read-write locks: key-use.ts), on the key's version chain
 * (version-chain.ts), the same records as its plain lock states: a holder-list state is one version
 * holding the limit and every holder (with its mode, for a read-write lock). Every
 * change (take, release, extend, expire-out, forced release) is the unique insert of the next
 * version computed from the latest, so the holder set changes in one line of versions, each a
 * whole, checked successor of the one before: two takes based on the same version cannot both
 * land, and a take counts every holder of the version it extends. A write delayed for any time is
 * refused (E11000) or, where its id was pruned, not acted on (VersionChain, rule 2): it can never
 * add a holder to a state it did not see. Nothing updates a record in place (FerretDB's filtered
 * updates are not atomic; an extend in place could be lost under another holder's write).
 */
export class SlotCatalog {
  constructor(
    private readonly chain: VersionChain,
    private readonly processId: string,
    private readonly db: Db,
    private readonly readServerInfo: ServerInfoReader,
  ) {}

  head(key: string, bound: Bound): Promise<ChainRead> {
    return this.chain.head(key, bound);
  }

  /** Commits `holders` plus this acquisition as the key's next state, of `use`; null when another writer moved it first. */
  take(acquisition: Acquisition, read: ChainRead, use: KeyUse, holders: SlotHolder[], bound: Bound): Promise<Committed | null> {
    const fence = Number(read.current?.fence ?? 0) + 1;
    const mine = holderFor(acquisition, this.processId, fence, use.mode);
    return this.chain.commit(acquisition.key, read, slotStateFields(use.limit, [...holders, mine], fence), bound);
  }

  /** Frees the slot (or read-write grant) `ts` holds; false when it holds none. `first` is a read already made. */
  async release(held: { key: string; ts: ObjectId }, bound: Bound, first?: ChainRead): Promise<boolean> {
    const done = await this.rewrite(held.key, bound, first, (state) => without(state, (holder) => holder.ts.equals(held.ts)));
    return done !== null;
  }

  /** Frees whatever slot (or read-write grant) the attempt `lockId` may hold although its reply was lost. */
  async abandon(key: string, lockId: string, bound: Bound): Promise<void> {
    await this.rewrite(key, bound, undefined, (state) => without(state, (holder) => holder.lockId === lockId));
  }

  /** Drops these (judged expired) holders; false when the state changed meanwhile, so that the judgement is void. */
  async expireOut(state: SlotState, expired: readonly SlotHolder[], bound: Bound): Promise<boolean> {
    const read = await this.chain.head(state._id, bound);
    if (!isSlotState(read.current) || read.current.commit === undefined || !read.current.commit.equals(state.commit!)) return false;
    const gone = new Set(expired.map((holder) => holder.ts.toHexString()));
    const fields = without(read.current, (holder) => gone.has(holder.ts.toHexString()));
    return fields !== null && (await this.chain.commit(state._id, read, fields, bound)) !== null;
  }

  /**
   * A new lease for the slot `ts` holds (the new `extended` is the sign of life contenders look for);
   * null when it holds none. `extended` is the server's time, as a lock's extend writes it
   * ($currentDate), since holders() judges it on the server's clock; a version record is inserted
   * whole, so the clock is read beside the key.
   */
  async extend(held: { key: string; ts: ObjectId }, lease: number, bound: Bound): Promise<Committed | null> {
    const [first, server] = await Promise.all([this.chain.head(held.key, bound), this.readServerInfo(this.db, bound.signal)]);
    const now = server.serverTime.getTime();
    return this.rewrite(held.key, bound, first, (state) => {
      const at = state.holders.findIndex((holder) => holder.ts.equals(held.ts));
      if (at < 0) return null;
      const holders = [...state.holders];
      const before = holders[at]!;
      // Strictly later than the last one, so that an observation always sees the change.
      const extended = new Date(Math.max(now, (before.extended?.getTime() ?? 0) + 1));
      holders[at] = { ...before, lease, extended };
      return slotStateFields(state.limit, holders, state.fence);
    });
  }

  /** Administrative: frees every slot (or read-write grant); true if there were holders. The limit and the fence stay. */
  async clear(key: string, bound: Bound, first?: ChainRead): Promise<boolean> {
    return (
      (await this.rewrite(key, bound, first, (state) =>
        state.holders.length > 0 ? slotStateFields(state.limit, [], state.fence) : null,
      )) !== null
    );
  }

  /**
   * Reads the key (or uses `first`), asks `edit` for the next state of a holder-list key (null: nothing
   * to change, also when the key is no holder list) and commits it; a lost race reads again.
   */
  private async rewrite(
    key: string,
    bound: Bound,
    first: ChainRead | undefined,
    edit: (state: SlotState) => LockFields | null,
  ): Promise<Committed | null> {
    const deadline = Date.now() + CHANGE_RETRY_MS;
    let read = first;
    for (let attempt = 1; ; attempt++) {
      read ??= await this.chain.head(key, bound);
      const fields = isSlotState(read.current) ? edit(read.current) : null;
      if (!fields) return null;
      const committed = await this.chain.commit(key, read, fields, bound);
      if (committed) return committed;
      read = undefined;
      if (Date.now() > deadline) {
        throw new BackendError(
          'mongodb',
          `the holder list of "${key}" kept changing for ${CHANGE_RETRY_MS} ms (${attempt} attempts) while it was being changed`,
        );
      }
      // Another writer committed first.
      await backoff(attempt, bound.signal);
    }
  }
}

/** The state without the holders `leaving` picks; null when it picks none. */
function without(state: SlotState, leaving: (holder: SlotHolder) => boolean): LockFields | null {
  const holders = state.holders.filter((holder) => !leaving(holder));
  return holders.length === state.holders.length ? null : slotStateFields(state.limit, holders, state.fence);
}
