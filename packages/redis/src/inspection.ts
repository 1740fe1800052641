import type { LockInfo } from '@holdfast/core';
import { holderRecordOf } from './holder-record.js';

/** What the INSPECT script returns for a held key: value, pttl, the holder hash's fields, the fence counter. */
export type InspectScriptReply = [...InspectReply, fence: string | null];

/**
 * One server keeps the holder record in the lock key's value and the holder's token is its fence
 * counter (nothing else bumps it while the key is held); a quorum's record is its holder hash. Either
 * way, as the quorum form: the value is the lockId, and the record's fields follow it.
 */
export function inspectReplyOf(reply: InspectScriptReply | null): InspectReply | null {
  if (reply === null) return null;
  const [value, pttl, , , , , , fence] = reply;
  const record = holderRecordOf(value);
  if (!record) return reply.slice(0, 7) as InspectReply;
  return [record.lockId, pttl, record.lockId, record.owner, record.reason ?? null, String(record.acquiredAtMs), fence];
}

/** A held key as inspectionOf reads it: value (the lockId), pttl, then the holder record's fields. */
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
  const records = holding.filter((reply) => reply[2] === value);
  const token = grantToken(records, quorum);
  // Every holding node has the grant's record, yet a majority has not taken one token: the grant is
  // still being handed out (token-sync.ts), so the key is not held by anyone yet.
  if (token === undefined && records.length === holding.length) return null;
  return {
    key,
    owner: owner ?? FOREIGN_OWNER,
    reason: reason ?? undefined,
    acquiredAt: new Date(Number(acquiredAtMs)),
    expiresAt,
    token: token ?? mostRecorded(records),
    details,
  };
}

/**
 * Quorum: the grant's (informational) token is the one a majority of nodes records. A grant is
 * handed out only once the nodes that decided it (a majority) record its token (token-sync.ts);
 * until then each records its own counter, and a node that answered later may still show its own
 * counter for a moment after. Undefined when no token has a majority.
 */
function grantToken(records: readonly InspectReply[], quorum: number): bigint | undefined {
  const counts = new Map<string, number>();
  for (const record of records) {
    const nodeToken = record[6] ?? '0';
    const count = (counts.get(nodeToken) ?? 0) + 1;
    if (count >= quorum) return BigInt(nodeToken);
    counts.set(nodeToken, count);
  }
  return undefined;
}

/**
 * A held key whose records do not agree (a node that decided the grant restarted and lost its
 * record): the token most nodes record, the largest among equals.
 */
function mostRecorded(records: readonly InspectReply[]): bigint {
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
