import { BackendError, LockConflictError } from '@holdfast/core';
import { type CallContext, type GrantRequest, sleep } from '@holdfast/core/backend';
import type { LockKeys } from './key-names.js';
import type { NodeSet } from './node-set.js';
import { QUORUM_ACQUIRE, SYNC_TOKEN } from './quorum-scripts.js';
import { RedisGrant, releaseLock } from './redis-grant.js';
import { SentCommands } from './sent-commands.js';
import { TokenSync } from './token-sync.js';
import { BACKGROUND, untilAborted } from './until-aborted.js';
import type { Answer, Votes } from './votes.js';
import type { Refusal } from './wake-ups.js';

/** QUORUM_ACQUIRE's answer: [1, token] when granted, [0, pttl, counter] when busy, [-1] on a semaphore's key. */
type AcquireReply = [code: -1 | 0 | 1, tokenOrPttl: string | number, counter?: string];

export interface SplitVoteSettings {
  /** Quorum mode: extra attempts after a split vote (no majority for anyone), with random delays. */
  readonly splitVoteRetries: number;
  readonly retryJitterMs: number;
}

/**
 * One quorum grant attempt: QUORUM_ACQUIRE on every node at once, granted when a majority says yes
 * with lease left after the clock-drift allowance. Whatever a failed attempt may have set anywhere
 * is undone before it answers; a split vote (contenders each hold a minority) is retried after a
 * random pause so that one of them wins.
 */
export async function acquire(
  nodes: NodeSet,
  keys: LockKeys,
  request: GrantRequest,
  call: CallContext,
  settings: SplitVoteSettings,
): Promise<RedisGrant | Refusal> {
  const reason = request.reason === undefined ? ['', '0'] : [request.reason, '1'];
  const lockKeys = [keys.lock, keys.fence, keys.holder, ...keys.legacyFence];
  // Every command of this call reaches a node after the previous ones settled there: an undo after
  // the grant it undoes (whose EVAL may come a round trip late, NOSCRIPT), a split vote's retry
  // (same lockId) after the previous round's undo.
  const sent = new SentCommands();
  const undo = (undoCall: CallContext): Promise<unknown> => releaseLock(nodes, keys, request.lockId, undoCall, sent).catch(() => undefined);
  for (let attempt = 0; ; attempt++) {
    const started = Date.now();
    // The holder record's time is the client's: the nodes' clocks differ.
    const args = [request.lockId, request.ttlMs, request.owner, ...reason, started];
    const late = new LateAnswers();
    const votes = await nodes
      .ask(call, 'acquire', (client) => sent.after(client, () => QUORUM_ACQUIRE.run(client, lockKeys, args) as Promise<AcquireReply>), {
        // Like Redlock, the first majority decides; the others' answers still count when they come (late).
        decision: {
          decided: (partial) =>
            partial.count(isGranted) >= nodes.quorum ||
            (partial.conflictDecides(isConflict) ?? partial.count((reply) => !isGranted(reply)) >= nodes.quorum),
          late: (answer) => late.heard(answer),
        },
      })
      .catch((error: unknown) => {
        // Abandoned (abort, deadline): core's own undo goes out at once; this one follows the grant's late EVAL.
        void undo(BACKGROUND);
        throw error;
      });
    const granted = votes.count(isGranted);
    const mayHold = granted > 0 || votes.errors.length > 0 || votes.pending > 0;
    // A semaphore decides only on a majority of nodes (Votes.conflictDecides); on fewer it is a refusal
    // for now, tried again below.
    const conflicts = votes.count(isConflict);
    if (conflicts >= nodes.quorum) {
      if (mayHold) await undo(call);
      throw new LockConflictError(request.key, 'it is in use as a semaphore, not a plain lock');
    }
    if (granted >= nodes.quorum && nodes.validity(request.ttlMs, started) > 0) {
      const token = tokenOf(votes.answers);
      const tokens = new TokenSync(token, (client, level, token) =>
        SYNC_TOKEN.evaluate(client, [keys.fence, keys.holder], [level.toString(), token.toString(), request.lockId]),
      );
      for (const { value, session } of votes.answered) tokens.heard(session, counterOf(value), isGranted(value));
      await tokensTaken(tokens, undo, call);
      // The sync's round trip comes out of the lease too; too late, the attempt failed like any other (below).
      if (nodes.validity(request.ttlMs, started) > 0) {
        const fields = {
          lockId: request.lockId,
          token,
          // The local time the request was sent: the nodes' clocks differ.
          acquiredAt: new Date(started),
          leaseEnd: started + request.ttlMs,
          onLost: request.onLost,
        };
        const grant = new RedisGrant(nodes, keys, fields, votes.votesFor(isGranted));
        late.deliver(({ value, session }) => {
          tokens.heard(session, counterOf(value));
          if (isGranted(value) && session) grant.lateVote(session);
        });
        return grant;
      }
    } else if (votes.tooManyFailed) {
      // A node that did not answer may still have applied the grant: undo it without making the caller wait.
      void undo(BACKGROUND);
      throw votes.failure('acquire');
    }
    // Nodes that granted, failed or did not answer yet may hold the key: undo it everywhere.
    if (mayHold) await undo(call);
    if ((votes.count((reply) => !isGranted(reply)) >= nodes.quorum && conflicts === 0) || attempt >= settings.splitVoteRetries)
      return { freeInMs: freeInMs(votes, nodes.quorum) };
    await sleep(Math.random() * settings.retryJitterMs, call.signal);
  }
}

/**
 * Quorum: waits, within the call's signal, until the deciding nodes that granted with another
 * counter have taken the token (TokenSync.acknowledged). If one did not (a cut connection, a
 * timeout), the grant cannot be trusted to be fenced: it is released everywhere and the attempt
 * fails with a BackendError, as when too many nodes fail; core retries a failed attempt while the
 * caller's wait lasts. An abort also releases it (in the background) and fails the call.
 */
async function tokensTaken(tokens: TokenSync, undo: (call: CallContext) => Promise<unknown>, call: CallContext): Promise<void> {
  const acknowledged = tokens.acknowledged();
  if (!acknowledged) return;
  const signal = call.signal;
  try {
    await untilAborted(acknowledged, { signal }, 'acquire');
  } catch (error) {
    if (signal.aborted) {
      void undo(BACKGROUND);
      throw error;
    }
    await undo({ signal });
    const cause = error instanceof Error ? error.message : String(error);
    throw new BackendError('redis', `acquire: a node that granted did not take the grant's token, so it was released (${cause})`, error);
  }
}

function isGranted(reply: AcquireReply): boolean {
  return reply[0] === 1;
}

/** The node holds the key as a semaphore. */
function isConflict(reply: AcquireReply): boolean {
  return reply[0] === -1;
}

/** Answers that come after the grant was decided, held until the grant exists to hear them. */
class LateAnswers {
  private answers: Answer<AcquireReply>[] | undefined = [];
  private listener: ((answer: Answer<AcquireReply>) => void) | undefined;

  heard(answer: Answer<AcquireReply>): void {
    if (this.listener) this.listener(answer);
    else this.answers?.push(answer);
  }

  deliver(listener: (answer: Answer<AcquireReply>) => void): void {
    this.listener = listener;
    for (const answer of this.answers ?? []) listener(answer);
    this.answers = undefined;
  }
}

/**
 * Informational only (capabilities.fencing = 'none'): the largest counter of the nodes that answered
 * before the grant was decided, busy ones included; TokenSync brings the others up to it.
 */
function tokenOf(answers: readonly AcquireReply[]): bigint {
  let token = 0n;
  for (const reply of answers) {
    const counter = counterOf(reply);
    if (counter > token) token = counter;
  }
  return token;
}

/** The node's fencing counter after the attempt (0 for a semaphore's key, which answers none). */
function counterOf(reply: AcquireReply): bigint {
  const counter = isGranted(reply) ? reply[1] : reply[2];
  return counter === undefined ? 0n : BigInt(counter);
}

/** The quorum-th shortest time until a node has the key free: a majority is free by then. */
function freeInMs(votes: Votes<AcquireReply>, quorum: number): number {
  // Nodes that granted (the grant was undone) are free now; -1 is a key without expiry (not ours).
  const remaining = votes.answers.map(([code, pttl]) => (code === 1 ? 0 : pttl === -1 ? Infinity : Math.max(0, Number(pttl))));
  for (let i = remaining.length; i < votes.nodes; i++) remaining.push(Infinity);
  remaining.sort((a, b) => a - b);
  return remaining[quorum - 1]!;
}
