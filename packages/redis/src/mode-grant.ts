import { LockConflictError, type LockInfo } from '@holdfast/core';
import { type BackendGrant, type CallContext, type Extension, type ModeRequest, NOT_HELD, stillHeld } from '@holdfast/core/backend';
import { FOREIGN_OWNER } from './inspection.js';
import type { LockKeys } from './key-names.js';
import { EXTEND_MODE, LEAVE_MODE_LINE, MODE_HELD, MODE_HOLDERS, RELEASE_MODE, TAKE_MODE } from './mode-scripts.js';
import type { NodeSet } from './node-set.js';
import { confirmReplicated } from './replica-sync.js';
import type { Session, Voter } from './session.js';
import { onTheNode } from './single-node-call.js';
import { QUEUE_ENTRY_TTL_MS } from './single-node-grant.js';
import { byToken, type HeldShare } from './slot-holders.js';
import { BACKGROUND } from './until-aborted.js';
import type { Refusal } from './wake-ups.js';

/** The shortest life of a waiting place: several of a waiter's attempts (MODE_POLL_MS apart) fit in it. */
const MIN_PLACE_TTL_MS = 250;

/**
 * How long a waiting place stays in a key's line without being refreshed: half the TTL the waiter
 * asks for, within [MIN_PLACE_TTL_MS, QUEUE_ENTRY_TTL_MS], as a plain lock's queue entries. A live
 * waiter refreshes it at each attempt (at least every MODE_POLL_MS), so it keeps its turn; one that
 * died or was stopped holds the readers behind it back no longer than this.
 */
function placeTtlMs(ttlMs: number): number {
  return Math.min(QUEUE_ENTRY_TTL_MS, Math.max(MIN_PLACE_TTL_MS, Math.floor(ttlMs / 2)));
}

/** The read-write line of a lock: companion keys, in the lock key's hash slot (key-names.ts). */
function lineKeys(keys: LockKeys): [line: string, info: string] {
  return [keys.rwLine, keys.rwLineInfo];
}

type TakeReply = [code: 1, token: string, acquiredAtMs: string] | [code: 0, freeInMs: number] | [code: -1];

/** One attempt at a reader's or the writer's grant on the only server (TAKE_MODE decides on the server's clock). */
export async function takeMode(nodes: NodeSet, keys: LockKeys, request: ModeRequest, call: CallContext): Promise<RedisModeGrant | Refusal> {
  const reason = request.reason === undefined ? ['', '0'] : [request.reason, '1'];
  const placeTtl = placeTtlMs(request.ttlMs);
  const args = [request.lockId, request.ttlMs, request.mode, request.owner, ...reason, request.place?.id ?? '', placeTtl];
  const started = Date.now();
  const { value: reply, session } = await onTheNode(
    nodes,
    call,
    'acquire',
    (client) => TAKE_MODE.run(client, [keys.lock, keys.fence, ...lineKeys(keys)], args) as Promise<TakeReply>,
  );
  if (reply[0] === -1) throw new LockConflictError(request.key, 'it is in use as a plain lock or a semaphore, not a read-write lock');
  if (reply[0] === 0) {
    const untilLapse = reply[1] < 0 ? placeTtl : reply[1];
    return { freeInMs: Math.min(untilLapse, placeTtl / 2) };
  }
  // With the `replicas` option it counts only once replicated, as a lock's or a slot's grant does.
  if (nodes.replicaSync && session) {
    try {
      await confirmReplicated(session.client, keys.lock, nodes.replicaSync, call, 'acquire');
    } catch (error) {
      void releaseMode(nodes, keys, request.lockId, BACKGROUND).catch(() => undefined);
      throw error;
    }
  }
  return new RedisModeGrant(nodes, keys, request, BigInt(reply[1]), new Date(Number(reply[2])), started + request.ttlMs, session);
}

/** A waiting acquire ended without a grant: its place leaves the line, and whoever waited behind it is woken. */
export async function leaveModeLine(nodes: NodeSet, keys: LockKeys, placeId: string, call: CallContext): Promise<void> {
  await onTheNode(nodes, call, 'leaveQueue', (client) =>
    LEAVE_MODE_LINE.run(client, [keys.lock, ...lineKeys(keys)], [placeId, keys.channel]),
  );
}

/** Frees `lockId`'s grant if it holds one (and wakes the waiters); true if it did. */
export async function releaseMode(nodes: NodeSet, keys: LockKeys, lockId: string, call: CallContext): Promise<boolean> {
  const { value } = await onTheNode(
    nodes,
    call,
    'release',
    (client) => RELEASE_MODE.run(client, [keys.lock], [lockId, keys.channel]) as Promise<number>,
  );
  return value === 1;
}

/** The record TAKE_MODE keeps per holder. */
interface ModeRecord {
  readonly owner: string;
  readonly reason?: string;
  readonly at: string;
  readonly token: string;
  readonly mode: string;
}

/** MODE_HOLDERS' answer as holders, lease ends in local time. */
export function modeSharesOf(reply: readonly string[], key: string): HeldShare[] {
  if (reply.length === 0) return [];
  const serverNow = Number(reply[0]);
  const localNow = Date.now();
  const holders: HeldShare[] = [];
  for (let i = 1; i < reply.length; i += 3) {
    const record = reply[i + 2] ? (JSON.parse(reply[i + 2]!) as ModeRecord) : undefined;
    const info = {
      key,
      owner: record?.owner ?? FOREIGN_OWNER,
      reason: record?.reason,
      acquiredAt: new Date(Number(record?.at ?? serverNow)),
      expiresAt: new Date(localNow + Number(reply[i + 1]) - serverNow),
      token: BigInt(record?.token ?? 0),
      details: { mode: record?.mode ?? 'shared' },
    };
    holders.push({ lockId: reply[i]!, info });
  }
  return holders;
}

/** The key's unexpired read-write holders on the only server, oldest grant first. */
export async function modeHolders(nodes: NodeSet, keys: LockKeys, key: string, call: CallContext): Promise<LockInfo[]> {
  const { value: reply } = await onTheNode(
    nodes,
    call,
    'holders',
    (client) => MODE_HOLDERS.run(client, [keys.lock], []) as Promise<string[]>,
  );
  return byToken(modeSharesOf(reply, key).map((held) => held.info));
}

/**
 * A reader's or the writer's grant on one Redis server, owner-checked by its lockId. Like a slot, it
 * is only known to stand while the connection it was granted on stays open; a forced release of its
 * key is learnt at the next renewal (the script deletes the hash, extend then finds nothing).
 */
export class RedisModeGrant implements BackendGrant, Voter {
  private gone = false;

  constructor(
    private readonly nodes: NodeSet,
    private readonly keys: LockKeys,
    private readonly request: ModeRequest,
    readonly token: bigint,
    readonly acquiredAt: Date,
    public leaseEnd: number,
    private readonly session: Session | undefined,
  ) {
    session?.enlist(this);
  }

  get expiresAt(): Date {
    return new Date(this.leaseEnd);
  }

  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const started = Date.now();
    const lockId = this.request.lockId;
    const { value, session } = await onTheNode(
      this.nodes,
      call,
      'extend',
      (client) => EXTEND_MODE.run(client, [this.keys.lock], [lockId, ttlMs]) as Promise<number>,
    );
    if (value !== 1) {
      this.forget();
      return NOT_HELD;
    }
    const sync = this.nodes.replicaSync;
    if (sync && session) await confirmReplicated(session.client, this.keys.lock, sync, call, 'extend');
    this.leaseEnd = started + ttlMs;
    return stillHeld(this.expiresAt);
  }

  release(call: CallContext): Promise<boolean> {
    this.forget();
    return releaseMode(this.nodes, this.keys, this.request.lockId, call);
  }

  async isHeld(call: CallContext): Promise<boolean> {
    const lockId = this.request.lockId;
    const { value } = await onTheNode(
      this.nodes,
      call,
      'isHeld',
      (client) => MODE_HELD.run(client, [this.keys.lock], [lockId]) as Promise<number>,
    );
    if (value !== 1) this.forget();
    return value === 1;
  }

  sessionEnded(_session: Session, detail: string): void {
    if (this.gone) return;
    this.forget();
    this.request.onLost(detail);
  }

  private forget(): void {
    this.gone = true;
    this.session?.withdraw(this);
  }
}
