import { LockConflictError, type LockInfo, UnsupportedError } from '@holdfast/core';
import { type CallContext, isModeRequest, type ModeRequest, type SlotRequest } from '@holdfast/core/backend';
import type { Db, ObjectId } from 'mongodb';
import { MONGOD_NO_READ_WRITE, MONGOD_NO_SEMAPHORES } from '../capabilities.js';
import type { ExpiryCheck } from '../expiry-check.js';
import type { MongoWake, PassOutcome } from '../grant-pass.js';
import type { Acquisition, LockCatalog } from '../lock-catalog.js';
import type { PingStore } from '../ping-store.js';
import type { ServerInfoReader } from '../server-info.js';
import { featureOf, type HolderListFeature, inUseAs, type KeyUse } from './key-use.js';
import type { SlotCatalog } from './slot-catalog.js';
import { modeHolderInfos, slotHolderInfos } from './slot-holders.js';
import { SlotJudge } from './slot-judge.js';
import { slotPass } from './slot-pass.js';
import type { SlotState } from './slot-state.js';
import { VersionedCatalog } from './versioned-catalog.js';

/** What the holder-list calls use of a connected provider. */
export interface HolderListParts {
  readonly db: Db;
  readonly catalog: LockCatalog;
  readonly pings: PingStore;
  readonly expiry: ExpiryCheck;
}

/** Why each feature built on holder lists is missing on mongod (capabilities.noSemaphores / noReadWrite). */
const ON_MONGOD: Record<HolderListFeature, string> = {
  semaphores: MONGOD_NO_SEMAPHORES,
  'read-write locks': MONGOD_NO_READ_WRITE,
};

/**
 * The backend's calls on keys held by a list of holders: semaphores and read-write locks, both on
 * the version records (slot-catalog.ts, key-use.ts), which only the FerretDB catalog writes. On
 * mongod the lock documents are changed in place by findAndModify and every call fails with the
 * UnsupportedError that `capabilities.noSemaphores` or `capabilities.noReadWrite` explains.
 */
export class HolderLists {
  private judge: SlotJudge | undefined;

  constructor(
    private readonly readServerInfo: ServerInfoReader,
    /** Queues an unlock by ts for the pinger to retry until the server confirms it. */
    private readonly unlockSoon: (key: string, ts: ObjectId) => void,
  ) {}

  /** Only the version-record catalog (FerretDB) has holder lists. */
  static supportedBy(catalog: LockCatalog): boolean {
    return catalog instanceof VersionedCatalog;
  }

  /**
   * The grant pass of a semaphore slot or a read-write grant (`use`). Throws the UnsupportedError
   * here, on mongod, before any pass begins.
   */
  passFor(parts: HolderListParts, use: KeyUse, call: CallContext): (acquisition: Acquisition) => Promise<PassOutcome> {
    const slots = slotsOf(parts.catalog, use.feature);
    const judge = this.judgeOf(parts);
    const { expiry } = parts;
    return (acquisition) => slotPass({ slots, judge, expiry, unlockSoon: this.unlockSoon }, acquisition, use, call);
  }

  /** The live holders of the key's semaphore (none while it is a read-write lock). */
  slotHolders(parts: HolderListParts, key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return slotHolderInfos(this.holderParts(parts, 'semaphores'), key, call);
  }

  /** The live holders of the key's read-write lock, each with its mode (none while it is a semaphore). */
  modeHolders(parts: HolderListParts, key: string, call: CallContext): Promise<readonly LockInfo[]> {
    return modeHolderInfos(this.holderParts(parts, 'read-write locks'), key, call);
  }

  /** Frees whatever slot or read-write grant the attempt `request` may hold although its reply was lost. */
  abandon(parts: HolderListParts, request: SlotRequest | ModeRequest, call: CallContext): Promise<void> {
    const feature = isModeRequest(request) ? 'read-write locks' : 'semaphores';
    return slotsOf(parts.catalog, feature).abandon(request.key, request.lockId, call);
  }

  /**
   * A lock grab met a holder list with holders: a conflict while any may be live; when all are
   * judged expired they are dropped and the key is free for the next attempt, at once.
   */
  async expireOrConflict(state: SlotState, parts: HolderListParts, call: CallContext): Promise<MongoWake> {
    const verdict = await this.judgeOf(parts).judge(state._id, state.holders, call);
    if (verdict.live.length > 0) throw new LockConflictError(state._id, `it is in use as ${inUseAs(state.limit)}, not as a plain lock`);
    await slotsOf(parts.catalog, featureOf(state.limit)).expireOut(state, verdict.expired, call);
    return { holder: null, judgeableAt: Date.now() };
  }

  private holderParts(parts: HolderListParts, feature: HolderListFeature) {
    return { db: parts.db, slots: slotsOf(parts.catalog, feature), pings: parts.pings, readServerInfo: this.readServerInfo };
  }

  /** One per provider, for lock grabs and both uses alike: it remembers when each holder can next be judged. */
  private judgeOf(parts: HolderListParts): SlotJudge {
    this.judge ??= new SlotJudge(parts.expiry);
    return this.judge;
  }
}

/** The holder-list commands, or the UnsupportedError that `capabilities.noSemaphores` / `noReadWrite` explains. */
function slotsOf(catalog: LockCatalog, feature: HolderListFeature): SlotCatalog {
  if (catalog instanceof VersionedCatalog) return catalog.slots;
  throw new UnsupportedError('mongodb', feature, ON_MONGOD[feature]);
}
