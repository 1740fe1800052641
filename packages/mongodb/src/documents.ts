import type { ObjectId } from 'mongodb';

/** MongoDB's lock states (`type_locks`); 1 (LOCK_PREP) is legacy and never written. */
export const UNLOCKED = 0;
export const LOCKED = 2;

/**
 * A lock document, shaped as MongoDB's `config.locks`, plus Holdfast's fields:
 * `fence` (fencing counter, never reset), `lease` (the holder's expiry window in ms),
 * `renew` (false: the process ping does not keep this lock alive) and `extended` (server time of
 * the last explicit extend, which contenders observe for non-renewed locks).
 */
export interface LockDocument {
  _id: string;
  state: typeof UNLOCKED | typeof LOCKED;
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
}

/** A ping document, shaped as MongoDB's `config.lockpings`. */
export interface PingDocument {
  _id: string;
  ping: Date;
}

/** FerretDB only: a short-lived per-key mutation latch (see mutation-latch.ts). */
export interface LatchDocument {
  _id: string;
  nonce: string;
  at: Date;
}
