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

/**
 * The unexpired slots of the key on the server's clock, oldest grant first (tokens increase with
 * every grant). Lease ends are converted to local time by their distance from the server's now.
 */
export async function slotHolders(nodes: NodeSet, keys: LockKeys, key: string, call: CallContext): Promise<LockInfo[]> {
  const { value: reply } = await onTheNode(
    nodes,
    call,
    'holders',
    (client) => SLOT_HOLDERS.run(client, [keys.lock, keys.slots], []) as Promise<string[]>,
  );
  if (reply.length === 0) return [];
  const serverNow = Number(reply[0]);
  const limit = Number(reply[1]);
  const localNow = Date.now();
  const holders: LockInfo[] = [];
  for (let i = 2; i < reply.length; i += 3) {
    const record = reply[i + 2] ? (JSON.parse(reply[i + 2]!) as SlotRecord) : undefined;
    holders.push({
      key,
      owner: record?.owner ?? FOREIGN_OWNER,
      reason: record?.reason,
      acquiredAt: new Date(Number(record?.at ?? serverNow)),
      expiresAt: new Date(localNow + Number(reply[i + 1]) - serverNow),
      token: BigInt(record?.token ?? 0),
      details: { limit },
    });
  }
  return holders.sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
}
