import { LockConflictError, type LockInfo, UnsupportedError } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { Db, ObjectId } from 'mongodb';
import { MONGOD_NO_SEMAPHORES } from '../capabilities.js';
import type { ExpiryCheck } from '../expiry-check.js';
import type { MongoWake, PassOutcome } from '../grant-pass.js';
import type { Acquisition, LockCatalog } from '../lock-catalog.js';
import type { PingStore } from '../ping-store.js';
import type { ServerInfoReader } from '../server-info.js';
import type { SlotCatalog } from './slot-catalog.js';
import { slotHolderInfos } from './slot-holders.js';
import { SlotJudge } from './slot-judge.js';
import { slotPass } from './slot-pass.js';
import type { SlotState } from './slot-state.js';
import { VersionedCatalog } from './versioned-catalog.js';

/** What the semaphore calls use of a connected provider. */
export interface SemaphoreParts {
  readonly db: Db;
  readonly catalog: LockCatalog;
  readonly pings: PingStore;
  readonly expiry: ExpiryCheck;
}

/**
 * The backend's semaphore calls. Slots live on the version records (slot-catalog.ts), which only the
 * FerretDB catalog writes; on mongod the lock documents are changed in place by findAndModify and
 * every call fails with the UnsupportedError that `capabilities.noSemaphores` explains.
 */
export class Semaphores {
  private judge: SlotJudge | undefined;

  constructor(
    private readonly readServerInfo: ServerInfoReader,
    /** Queues an unlock by ts for the pinger to retry until the server confirms it. */
    private readonly unlockSoon: (key: string, ts: ObjectId) => void,
  ) {}

  /** Only the version-record catalog (FerretDB) has semaphore commands. */
  static supportedBy(catalog: LockCatalog): boolean {
    return catalog instanceof VersionedCatalog;
  }

  /**
   * The grant pass of a slot of a semaphore of `limit`. Throws the UnsupportedError here, on mongod,
   * before any pass begins.
   */
  passFor(parts: SemaphoreParts, limit: number, call: CallContext): (acquisition: Acquisition) => Promise<PassOutcome> {
    const slots = slotsOf(parts.catalog);
    const judge = this.judgeOf(parts);
    const { expiry } = parts;
    return (acquisition) => slotPass({ slots, judge, expiry, unlockSoon: this.unlockSoon }, acquisition, limit, call);
  }

  holders(parts: SemaphoreParts, key: string, call: CallContext): Promise<readonly LockInfo[]> {
    const slots = slotsOf(parts.catalog);
    return slotHolderInfos({ db: parts.db, slots, pings: parts.pings, readServerInfo: this.readServerInfo }, key, call);
  }

  /** Frees whatever slot the attempt `lockId` may hold although its reply was lost. */
  abandon(parts: SemaphoreParts, key: string, lockId: string, call: CallContext): Promise<void> {
    return slotsOf(parts.catalog).abandon(key, lockId, call);
  }

  /**
   * A lock grab met a semaphore with holders: a conflict while any may be live; when all are judged
   * expired they are dropped and the key is free for the next attempt, at once.
   */
  async expireOrConflict(state: SlotState, parts: SemaphoreParts, call: CallContext): Promise<MongoWake> {
    const verdict = await this.judgeOf(parts).judge(state._id, state.holders, call);
    if (verdict.live.length > 0) throw new LockConflictError(state._id, 'it is in use as a semaphore, not a plain lock');
    await slotsOf(parts.catalog).expireOut(state, verdict.expired, call);
    return { holder: null, judgeableAt: Date.now() };
  }

  private judgeOf(parts: SemaphoreParts): SlotJudge {
    this.judge ??= new SlotJudge(parts.expiry);
    return this.judge;
  }
}

/** The semaphore commands, or the UnsupportedError that `capabilities.noSemaphores` explains. */
function slotsOf(catalog: LockCatalog): SlotCatalog {
  if (catalog instanceof VersionedCatalog) return catalog.slots;
  throw new UnsupportedError('mongodb', 'semaphores', MONGOD_NO_SEMAPHORES);
}
