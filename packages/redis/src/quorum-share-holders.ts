import type { LockInfo } from '@holdfast/core';
import type { CallContext } from '@holdfast/core/backend';
import type { LockKeys } from './key-names.js';
import { modeSharesOf } from './mode-grant.js';
import { MODE_HOLDERS } from './mode-scripts.js';
import type { NodeSet } from './node-set.js';
import { byToken, type HeldShare, slotSharesOf } from './slot-holders.js';
import { slotQuorum } from './slot-quorum.js';
import { SLOT_HOLDERS } from './slot-scripts.js';

/**
 * A quorum's slot or read-write holders: those that hold on as many nodes as a grant needs (a
 * semaphore's slotQuorum for its limit, a majority for read-write), so a grant half made or half
 * undone is not reported. Each is reported with its earliest lease end among those nodes and the
 * highest token they show (TokenSync sets them all to the grant's token).
 */
export async function quorumShareHolders(
  nodes: NodeSet,
  keys: LockKeys,
  key: string,
  kind: 'slots' | 'modes',
  call: CallContext,
): Promise<LockInfo[]> {
  const votes = await nodes.ask(call, 'holders', (client) =>
    kind === 'slots'
      ? (SLOT_HOLDERS.run(client, [keys.lock, keys.slots], []) as Promise<string[]>)
      : (MODE_HOLDERS.run(client, [keys.lock], []) as Promise<string[]>),
  );
  if (votes.tooManyFailed) throw votes.failure('holders');
  const seen = new Map<string, { info: LockInfo; nodes: number; limit?: number }>();
  for (const reply of votes.answers) {
    const shares: HeldShare[] = kind === 'slots' ? slotSharesOf(reply, key) : modeSharesOf(reply, key);
    for (const { lockId, info } of shares) {
      const before = seen.get(lockId);
      const limit = kind === 'slots' ? Number(info.details?.limit) : undefined;
      if (!before) {
        seen.set(lockId, { info, nodes: 1, limit });
        continue;
      }
      const earliest = earlier(info.expiresAt, before.info.expiresAt);
      const token = info.token > before.info.token ? info.token : before.info.token;
      seen.set(lockId, { info: { ...before.info, expiresAt: earliest, token }, nodes: before.nodes + 1, limit: before.limit });
    }
  }
  const holders: LockInfo[] = [];
  for (const { info, nodes: holding, limit } of seen.values()) {
    const needed = limit === undefined || !(limit > 0) ? nodes.quorum : slotQuorum(nodes.size, limit);
    if (holding >= needed) holders.push(info);
  }
  return byToken(holders);
}

/** The earlier of two lease ends (null: none). */
function earlier(a: Date | null, b: Date | null): Date | null {
  if (!a || !b) return a ?? b;
  return a < b ? a : b;
}
