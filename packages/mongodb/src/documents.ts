import type { LockMode } from '@holdfast/core/backend';
import type { ObjectId } from 'mongodb';

/** MongoDB's lock states (`type_locks`); 1 (LOCK_PREP) is legacy and never written. */
export const UNLOCKED = 0;
export const LOCKED = 2;
/**
 * Holdfast only (FerretDB): the key is a holder list, a semaphore or (`limit` -1) a read-write lock;
 * its holders are in `holders` (see ferretdb/slot-state.ts and ferretdb/key-use.ts).
 */
export const SLOTS = 3;

/**
 * A lock document, shaped as MongoDB's `config.locks`, plus Holdfast's fields:
 * `fence` (fencing counter, never reset), `lease` (the holder's expiry window in ms),
 * `renew` (false: the process ping does not keep this lock alive), `extended` (server time of
 * the last explicit extend, which contenders observe for non-renewed locks) and `lockId` (the
 * acquire attempt that wrote it, so that an attempt whose reply was lost can be undone by it).
 */
export interface LockDocument {
  _id: string;
  state: typeof UNLOCKED | typeof LOCKED | typeof SLOTS;
  process: string;
  ts: ObjectId;
  who: string;
  why: string;
  when: Date;
  /** Absent on documents written by MongoDB itself, like lease and renew. */
  fence?: number | bigint;
  lease?: number;
  renew?: boolean;
  extended?: Date;
  lockId?: string;
  /** FerretDB only: the version this state has in the key's version records (see ferretdb/version-chain.ts). */
  version?: number;
  /** FerretDB only: the id of the commit that wrote this version, unique to it. */
  commit?: ObjectId;
  /** Holder lists only (state SLOTS): the key's limit (-1: a read-write lock) and its holders, oldest first. */
  limit?: number;
  holders?: SlotHolder[];
}

/** One holder of a semaphore slot or a read-write grant: the fields a lock document has for its one holder. */
export interface SlotHolder {
  ts: ObjectId;
  lockId: string;
  process: string;
  who: string;
  why: string;
  when: Date;
  /** This holder's token: the key's fence counter at its take. */
  fence: number;
  lease: number;
  renew: boolean;
  /** Changed by every extend: a sign of life for contenders, as on a lock document. */
  extended?: Date;
  /** Read-write grants only: a reader ('shared') or the writer ('exclusive'). */
  mode?: LockMode;
}

/** A ping document, shaped as MongoDB's `config.lockpings`. */
export interface PingDocument {
  _id: string;
  ping: Date;
}
