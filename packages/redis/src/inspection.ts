import type { LockInfo } from '@holdfast/core';

/** What the INSPECT script returns for a held key: value, pttl, then the companion hash's fields. */
export type InspectReply = [
  value: string,
  pttlMs: number,
  id: string | null,
  owner: string | null,
  reason: string | null,
  acquiredAtMs: string | null,
  token: string | null,
];

/** Shown as the owner of a key held by something other than Holdfast (the redlock package, a script). */
export const FOREIGN_OWNER = '(not a holdfast lock)';

/**
 * Builds LockInfo from every node's answer: the key counts as held when a majority of nodes (the
 * only node, in single-node mode) holds the same value.
 */
export function inspectionOf(key: string, answers: (InspectReply | null)[], quorum: number, nodes: number): LockInfo | null {
  const replies = answers.filter((reply): reply is InspectReply => reply !== null);
  const byValue = new Map<string, InspectReply[]>();
  for (const reply of replies) byValue.set(reply[0], [...(byValue.get(reply[0]) ?? []), reply]);
  const holding = [...byValue.values()].find((group) => group.length >= quorum);
  if (!holding) return null;
  const [value] = holding[0]!;
  // Holdfast metadata belongs to this grant only if it names the same lockId as the key's value.
  const meta = holding.find((reply) => reply[2] === value);
  const remainingMs = remainingWhileMajority(holding, quorum);
  const expiresAt = Number.isFinite(remainingMs) ? new Date(Date.now() + remainingMs) : null;
  const details = { nodes, holdingNodes: holding.length, holdfast: meta !== undefined };
  if (!meta) {
    return { key, owner: FOREIGN_OWNER, reason: undefined, acquiredAt: new Date(), expiresAt, token: 0n, details: { ...details, value } };
  }
  const [, , , owner, reason, acquiredAtMs] = meta;
  const token = grantToken(holding.filter((reply) => reply[2] === value));
  return {
    key,
    owner: owner ?? FOREIGN_OWNER,
    reason: reason ?? undefined,
    acquiredAt: new Date(Number(acquiredAtMs)),
    expiresAt,
    token,
    details,
  };
}

/**
 * Quorum: the grant's (informational) token is the one most holding nodes record, the largest
 * among equals. The nodes that decided the grant (a majority) record the holder's token before
 * anything else reaches them (token-sync.ts); a node that answered later may still show its own
 * counter for a moment.
 */
function grantToken(records: readonly InspectReply[]): bigint {
  const counts = new Map<bigint, number>();
  let token = 0n;
  let most = 0;
  for (const record of records) {
    const nodeToken = BigInt(record[6] ?? 0);
    const count = (counts.get(nodeToken) ?? 0) + 1;
    counts.set(nodeToken, count);
    if (count > most || (count === most && nodeToken > token)) {
      token = nodeToken;
      most = count;
    }
  }
  return token;
}

/** The lock stands while a majority still has it: the quorum-th longest remaining TTL (-1: no expiry). */
function remainingWhileMajority(holding: InspectReply[], quorum: number): number {
  const remaining = holding.map(([, pttl]) => (pttl === -1 ? Infinity : Math.max(pttl, 0))).sort((a, b) => b - a);
  return remaining[quorum - 1] ?? 0;
}
