import type { LockInfo } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import { FOREIGN_OWNER } from './inspection.js';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { onTheNode } from './single-node-call.js';
import { SLOT_HOLDERS } from './slot-scripts.js';

/** The holder record TAKE_SLOT keeps per slot (JSON in the slots hash). */
interface SlotRecord {
  readonly owner: string;
  readonly reason?: string;
  readonly at: string;
  readonly token: string;
}

/** One live slot of a SLOT_HOLDERS answer: its lockId (to match it across a quorum's nodes) and what holders() reports. */
export interface HeldShare {
  readonly lockId: string;
  readonly info: LockInfo;
}

/** SLOT_HOLDERS' answer as holders, lease ends converted to local time by their distance from the server's now. */
export function slotSharesOf(reply: readonly string[], key: string): HeldShare[] {
  if (reply.length === 0) return [];
  const serverNow = Number(reply[0]);
  const limit = Number(reply[1]);
  const localNow = Date.now();
  const holders: HeldShare[] = [];
  for (let i = 2; i < reply.length; i += 3) {
    const record = reply[i + 2] ? (JSON.parse(reply[i + 2]!) as SlotRecord) : undefined;
    const info = {
      key,
      owner: record?.owner ?? FOREIGN_OWNER,
      reason: record?.reason,
      acquiredAt: new Date(Number(record?.at ?? serverNow)),
      expiresAt: new Date(localNow + Number(reply[i + 1]) - serverNow),
      token: BigInt(record?.token ?? 0),
      details: { limit },
    };
    holders.push({ lockId: reply[i]!, info });
  }
  return holders;
}

/** Oldest grant first (tokens increase with every grant). */
export function byToken(holders: LockInfo[]): LockInfo[] {
  return holders.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
}

/** The unexpired slots of the key on the only server's clock, oldest grant first. */
export async function slotHolders(nodes: NodeSet, keys: LockKeys, key: string, call: CallContext): Promise<LockInfo[]> {
  const { value: reply } = await onTheNode(
    nodes,
    call,
    'holders',
    (client) => SLOT_HOLDERS.run(client, [keys.lock, keys.slots], []) as Promise<string[]>,
  );
  return byToken(slotSharesOf(reply, key).map((held) => held.info));
}
