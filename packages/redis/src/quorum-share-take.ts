import type { CallContext, GrantRequest } from '@holdfast/core/backend';
import { sleep } from '@holdfast/core/backend';
import type { ForcedReleases } from './forced-releases.js';
import type { NodeSet } from './node-set.js';
import type { SplitVoteSettings } from './quorum-acquire.js';
import type { QuorumShare, ShareReply } from './quorum-share.js';
import { QuorumShareGrant, releaseShare } from './quorum-share-grant.js';
import { SentCommands } from './sent-commands.js';
import { TokenSync } from './token-sync.js';
import { BACKGROUND, untilAborted } from './until-aborted.js';
import type { Votes } from './votes.js';
import type { Refusal } from './wake-ups.js';

const isGranted = (reply: ShareReply): boolean => reply[0] === 1;
const isConflict = (reply: ShareReply): boolean => reply[0] < 0;
/** The node's counter after it granted (the grant's token there); 0n for any other answer. */
const counterOf = (reply: ShareReply): bigint => (reply[0] === 1 ? BigInt(reply[1]) : 0n);

/**
 * One quorum attempt at a shared grant (a slot, a reader's or the writer's grant): the take script
 * on every node at once, granted when `share.needed` nodes said yes with lease left after the
 * clock-drift allowance, as the quorum lock is (quorum-acquire.ts): whatever a failed attempt set
 * anywhere is undone before it answers, a split vote is retried after a random pause, tokens are
 * levelled by TokenSync before the grant is handed out.
 */
export async function takeShare(
  nodes: NodeSet,
  share: QuorumShare,
  request: GrantRequest,
  call: CallContext,
  settings: SplitVoteSettings,
  forced: ForcedReleases,
): Promise<QuorumShareGrant | Refusal> {
  const { needed } = share;
  const refusedEnough = (votes: Votes<ShareReply>): boolean => votes.count((reply) => !isGranted(reply)) > nodes.size - needed;
  const decided = (partial: Votes<ShareReply>): boolean =>
    partial.count(isGranted) >= needed || (partial.conflictDecides(isConflict) ?? refusedEnough(partial));
  const sent = new SentCommands();
  const undo = (undoCall: CallContext): Promise<unknown> => releaseShare(nodes, share, undoCall, sent).catch(() => undefined);
  for (let attempt = 0; ; attempt++) {
    const started = Date.now();
    const votes = await nodes
      .ask(call, 'acquire', (client) => sent.after(client, () => share.take(client)), {
        decision: { decided },
      })
      .catch((error: unknown) => {
        void undo(BACKGROUND);
        throw error;
      });
    const granted = votes.count(isGranted);
    const mayHold = granted > 0 || votes.errors.length > 0 || votes.pending > 0;
    // Another use of the key decides only on a majority of nodes (Votes.conflictDecides); on fewer it
    // is a refusal for now, tried again below.
    const conflicts = votes.count(isConflict);
    if (conflicts >= nodes.quorum) {
      if (mayHold) await undo(call);
      throw share.conflict(votes.answers.find(isConflict)!);
    }
    if (granted >= needed && nodes.validity(request.ttlMs, started) > 0) {
      const token = votes.answers.reduce((most, reply) => (counterOf(reply) > most ? counterOf(reply) : most), 0n);
      const tokens = new TokenSync(token, share.syncToken);
      for (const { value, session } of votes.answered) if (isGranted(value)) tokens.heard(session, counterOf(value), true);
      if (await tokensTaken(tokens, undo, call)) {
        if (nodes.validity(request.ttlMs, started) > 0) {
          const fields = {
            lockId: request.lockId,
            key: request.key,
            token,
            acquiredAt: new Date(started),
            leaseEnd: started + request.ttlMs,
          };
          const watch = share.isSlot ? forced : undefined;
          return new QuorumShareGrant(nodes, share, fields, votes.votesFor(isGranted), request.onLost, watch, sent);
        }
      }
    } else if (votes.errors.length > nodes.size - needed) {
      // Too few nodes answered to hold it: undo wherever it may have landed without making the caller wait.
      void undo(BACKGROUND);
      throw votes.failure('acquire');
    }
    if (mayHold) await undo(call);
    if ((refusedEnough(votes) && conflicts === 0) || attempt >= settings.splitVoteRetries) return { freeInMs: freeInMs(votes, needed) };
    await sleep(Math.random() * settings.retryJitterMs, call.signal);
  }
}

/**
 * Waits for the deciding nodes' token syncs; false (the attempt failed like any other, and is
 * undone by the caller) when one failed. An abort undoes the grant in the background and throws.
 */
async function tokensTaken(tokens: TokenSync, undo: (call: CallContext) => Promise<unknown>, call: CallContext): Promise<boolean> {
  const acknowledged = tokens.acknowledged();
  if (!acknowledged) return true;
  try {
    await untilAborted(acknowledged, call, 'acquire');
    return true;
  } catch (error) {
    if (!call.signal.aborted) return false;
    void undo(BACKGROUND);
    throw error;
  }
}

/** The needed-th shortest time until a node has room: by then enough nodes may grant. */
function freeInMs(votes: Votes<ShareReply>, needed: number): number {
  // A node that granted (undone now) has room; -1 is a busy node that named no lease end.
  const remaining = votes.answers.map((reply) => (reply[0] === 1 ? 0 : reply[0] === 0 && reply[1] >= 0 ? reply[1] : Infinity));
  for (let i = remaining.length; i < votes.nodes; i++) remaining.push(Infinity);
  remaining.sort((a, b) => a - b);
  return remaining[needed - 1]!;
}
