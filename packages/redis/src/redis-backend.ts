import { BackendError, type Capabilities, type LockInfo } from '@holdfast/core';
import {
  linkedController,
  sleep,
  type CallContext,
  type Grant,
  type GrantRequest,
  type LockBackend,
  type WaitOptions,
} from '@holdfast/core/backend';
import type { Redis } from 'ioredis';
import { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
import { HeldGrants } from './held-grants.js';
import { inspectionOf, type InspectReply } from './inspection.js';
import type { KeyNames } from './key-names.js';
import type { RedisNode } from './redis-node.js';
import { ReleaseListener } from './release-listener.js';
import { ACQUIRE, EXTEND, FORCE_RELEASE, INSPECT, RELEASE, REPAIR } from './scripts.js';
import { untilAborted } from './until-aborted.js';
import { poll, type Decision, type Votes } from './votes.js';

export interface RedisBackendSettings {
  /** Longest wait between checks while a key is busy, in case a wake-up was missed. */
  readonly pollIntervalMs: number;
  /** Quorum mode: clock drift allowance per ms of TTL (redlock: 0.01, plus 2 ms). */
  readonly driftFactor: number;
  /** Quorum mode: extra attempts after a split vote (no majority for anyone), with random delays. */
  readonly splitVoteRetries: number;
  readonly retryJitterMs: number;
  /**
   * Quorum mode: once a majority has settled a grant or a renewal, how long the others may still
   * answer (their votes count), at most a twentieth of the TTL. A node that takes longer is treated
   * as failed for this call.
   */
  readonly straggleMs: number;
}

/** ACQUIRE's answer: [1, token, acquiredAtMs] when granted, [0] or [0, counter] when busy. */
type AcquireReply = [code: 0 | 1, token?: string, acquiredAtMs?: string];

/** Margin after a holder's PTTL before re-checking, so the key has certainly expired on the server. */
const EXPIRY_MARGIN_MS = 5;

/** For work of our own (rolling back a partial grant, repairing): bounded by the command timeout only. */
const UNBOUNDED = new AbortController().signal;

/**
 * Locks on one Redis server, or with the Redlock algorithm on several independent ones: the same
 * scripts run on every node and an operation counts when a majority agrees. With one node the
 * majority is that node and there is no clock-drift allowance. Every call runs under its caller's
 * signal; a grant whose votes sat on a connection that dropped is reported lost at once.
 */
export class RedisBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: Capabilities;
  private readonly quorum: number;
  private readonly listener: ReleaseListener;
  private readonly held: HeldGrants;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly names: KeyNames,
    private readonly settings: RedisBackendSettings,
  ) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
    this.capabilities = nodes.length === 1 ? SINGLE_NODE_CAPABILITIES : QUORUM_CAPABILITIES;
    this.listener = new ReleaseListener(nodes);
    this.held = new HeldGrants(this.quorum);
    for (const node of nodes) node.onSessionEnded = (ended, detail) => this.held.sessionEnded(ended, detail);
  }

  private get isQuorum(): boolean {
    return this.nodes.length > 1;
  }

  async tryGrant(request: GrantRequest, { signal }: CallContext): Promise<Grant | null> {
    const keys = [this.names.lock(request.key), this.names.fence(request.key), this.names.holder(request.key)];
    const reason = request.reason === undefined ? ['', '0'] : [request.reason, '1'];
    const args = [request.lockId, request.ttlMs, request.owner, ...reason, this.isQuorum ? '1' : '0'];
    for (let attempt = 0; ; attempt++) {
      const started = Date.now();
      const votes = await this.ask(signal, 'acquire', (client) => ACQUIRE.run(client, keys, args) as Promise<AcquireReply>, {
        // The grace lets every healthy node answer, so the (informational) token is the same one inspect() reports.
        decision: {
          decided: (partial) => partial.count(([code]) => code === 1) >= this.quorum || partial.count(([code]) => code === 0) >= this.quorum,
          graceMs: this.straggleMs(request.ttlMs),
        },
      });
      const granted = votes.count(([code]) => code === 1);
      if (granted >= this.quorum && this.validity(request.ttlMs, started) > 0) {
        const grant = this.grantOf(votes.answers, started, request.ttlMs);
        this.held.add(request.lockId, request.onLost, votes.votesFor(([code]) => code === 1), started + request.ttlMs);
        return grant;
      }
      if (votes.tooManyFailed) {
        // A node that did not answer may still have applied the grant: undo it without making the caller wait.
        void this.rollback(request.key, request.lockId);
        throw votes.failure('acquire');
      }
      // Nodes that granted, failed or did not answer yet may hold the key: undo it everywhere.
      if (granted > 0 || votes.errors.length > 0 || votes.pending > 0) await this.release(request.key, request.lockId, { signal }).catch(() => undefined);
      const busy = votes.count(([code]) => code === 0);
      if (busy >= this.quorum || attempt >= this.settings.splitVoteRetries) return null;
      // A split vote: contenders each hold a minority. Retry after a random pause so one of them wins.
      await sleep(Math.random() * this.settings.retryJitterMs, signal);
    }
  }

  async waitForChange(key: string, { signal, timeoutMs }: WaitOptions): Promise<void> {
    if (signal.aborted) return;
    const bound = linkedController(signal);
    const cap = setTimeout(() => bound.controller.abort(new Error('wait slice over')), timeoutMs);
    const slice = bound.controller.signal;
    try {
      // A server that does not answer the SUBSCRIBE holds nobody beyond the slice: the caller just re-checks.
      const watch = await this.listener.watch([this.names.releaseChannel(key), this.names.keyspaceChannel(key)], slice).catch(() => undefined);
      if (!watch) return;
      try {
        // Checked after subscribing: a release between the caller's attempt and the subscription is seen here.
        const freeInMs = await this.msUntilFree(key, slice).catch((error: unknown) => {
          // The slice running out is the end of this wait, not a failure.
          if (slice.aborted && !signal.aborted) return 0;
          throw error;
        });
        if (freeInMs === 0) return;
        const capMs = Math.min(timeoutMs, freeInMs + EXPIRY_MARGIN_MS, this.settings.pollIntervalMs);
        await Promise.race([watch.changed, sleep(capMs, slice).catch(() => undefined)]);
      } finally {
        watch.stop();
      }
    } finally {
      clearTimeout(cap);
      bound.dispose();
    }
  }

  async extend(key: string, lockId: string, ttlMs: number, { signal }: CallContext): Promise<Date | null | undefined> {
    const keys = [this.names.lock(key), this.names.holder(key)];
    const started = Date.now();
    const votes = await this.ask(signal, 'extend', (client) => EXTEND.run(client, keys, [lockId, ttlMs]) as Promise<number>, {
      decision: {
        decided: (partial) => partial.count((answer) => answer === 1) >= this.quorum || partial.count((answer) => answer !== 1) > this.nodes.length - this.quorum,
        graceMs: this.straggleMs(ttlMs),
      },
    });
    const extended = votes.count((answer) => answer === 1);
    if (extended >= this.quorum) {
      if (this.validity(ttlMs, started) <= 0) throw new BackendError('redis', 'extend: the quorum answered too late for the lease');
      const denied = votes.votesFor((answer) => answer !== 1).map((vote) => vote.node);
      this.held.renewed(lockId, votes.votesFor((answer) => answer === 1), denied, started + ttlMs);
      // In the background: a hung node must not hold up the renewal.
      if (this.isQuorum && extended < this.nodes.length) void this.repair(key, lockId, ttlMs);
      return new Date(started + ttlMs);
    }
    // Lost only when enough nodes positively deny it; otherwise we cannot tell, and core retries.
    const denied = votes.count((answer) => answer !== 1);
    if (denied > this.nodes.length - this.quorum) {
      this.held.forget(lockId);
      return undefined;
    }
    throw votes.failure('extend');
  }

  async release(key: string, lockId: string, { signal }: CallContext): Promise<boolean> {
    this.held.forget(lockId);
    const channel = this.names.releaseChannel(key);
    const keys = [this.names.lock(key), this.names.holder(key)];
    // A server we never reached cannot hold the grant: no need to wait for it to answer.
    // The script goes to every node at once; a majority's answers are enough to report the outcome.
    const votes = await this.ask(signal, 'release', (client) => RELEASE.run(client, keys, [lockId, channel]) as Promise<number>, {
      ifNeverConnected: 0,
      decision: { decided: (partial) => partial.answers.length + partial.errors.length >= this.quorum && !partial.tooManyFailed },
    });
    if (votes.count((answer) => answer === 1) > 0) return true;
    if (votes.tooManyFailed) throw votes.failure('release');
    return false;
  }

  async isHeld(key: string, lockId: string, { signal }: CallContext): Promise<boolean> {
    const lockKey = this.names.lock(key);
    const votes = await this.ask(signal, 'isHeld', (client) => client.get(lockKey), {
      decision: {
        decided: (partial) => partial.count((value) => value === lockId) >= this.quorum || partial.count((value) => value !== lockId) > this.nodes.length - this.quorum,
      },
    });
    const held = votes.count((value) => value === lockId);
    if (held >= this.quorum) return true;
    if (votes.answers.length - held > this.nodes.length - this.quorum) {
      this.held.forget(lockId);
      return false;
    }
    throw votes.failure('isHeld');
  }

  async inspect(key: string, { signal }: CallContext): Promise<LockInfo | null> {
    const keys = [this.names.lock(key), this.names.holder(key)];
    const votes = await this.ask(signal, 'inspect', (client) => INSPECT.run(client, keys, []) as Promise<InspectReply | null>);
    if (votes.tooManyFailed) throw votes.failure('inspect');
    return inspectionOf(key, votes.answers, this.quorum, this.nodes.length);
  }

  async forceRelease(key: string, { signal }: CallContext): Promise<boolean> {
    const channel = this.names.releaseChannel(key);
    const keys = [this.names.lock(key), this.names.holder(key)];
    const votes = await this.ask(signal, 'forceRelease', (client) => FORCE_RELEASE.run(client, keys, [channel]) as Promise<number>);
    if (votes.tooManyFailed) throw votes.failure('forceRelease');
    return votes.count((answer) => answer === 1) > 0;
  }

  /** Quits politely; when `signal` aborts (close ran out of time) the sockets are closed at once. */
  async close({ signal }: CallContext): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.close(signal)));
  }

  /**
   * Runs `command` on every node at once, each on its current session; a node that is not
   * connected answers with an error, one that never was with `ifNeverConnected` when given.
   * Settles when every node answered, or as soon as `signal` aborts.
   */
  private async ask<T>(
    signal: AbortSignal,
    operation: string,
    command: (client: Redis) => Promise<T>,
    options: { ifNeverConnected?: T; decision?: Decision<T> } = {},
  ): Promise<Votes<T>> {
    const { ifNeverConnected, decision } = options;
    const votes = await untilAborted(
      poll<T>(
        this.nodes,
        this.quorum,
        async (node) => {
          if (ifNeverConnected !== undefined && !node.everConnected) return { value: ifNeverConnected, vote: { node, session: -1 } };
          const session = await node.ready(signal);
          try {
            return { value: await command(session.client), vote: { node, session: session.id } };
          } catch (error) {
            node.commandFailed(session, error);
            throw error;
          }
        },
        decision,
      ),
      signal,
      operation,
    );
    // A node that refuses the configuration (its db) is a configuration error, whatever the others said.
    if (votes.refusal) throw votes.refusal;
    return votes;
  }

  /** The wait for slow nodes after a majority decided comes out of the lease: at most a twentieth of it. */
  private straggleMs(ttlMs: number): number {
    return Math.min(this.settings.straggleMs, ttlMs / 20);
  }

  /** Redlock: what is left of the lease once the elapsed time and the clock drift are deducted. */
  private validity(ttlMs: number, started: number): number {
    if (!this.isQuorum) return ttlMs;
    const drift = Math.round(this.settings.driftFactor * ttlMs) + 2;
    return ttlMs - (Date.now() - started) - drift;
  }

  private grantOf(answers: AcquireReply[], started: number, ttlMs: number): Grant {
    if (!this.isQuorum) {
      const [, token, at] = answers[0]!;
      const acquiredAt = new Date(Number(at));
      return { token: BigInt(token!), acquiredAt, expiresAt: new Date(acquiredAt.getTime() + ttlMs) };
    }
    // Informational only (capabilities.fencing = 'none'): the largest counter of every node that answered.
    const token = answers.reduce((max, [, counter]) => (counter !== undefined && BigInt(counter) > max ? BigInt(counter) : max), 0n);
    return { token, acquiredAt: new Date(started), expiresAt: new Date(started + ttlMs) };
  }

  /**
   * Undoes a partial grant everywhere, including nodes whose answer was lost. Best effort, bounded by
   * the command timeout; on one connection Redis applies it after the grant it undoes.
   */
  private async rollback(key: string, lockId: string): Promise<void> {
    await this.release(key, lockId, { signal: UNBOUNDED }).catch(() => undefined);
  }

  /**
   * Puts the key back on nodes that forgot it (a restart without persistence) while we hold a
   * majority; those nodes vote for the grant again. Best effort, bounded by the command timeout.
   */
  private async repair(key: string, lockId: string, ttlMs: number): Promise<void> {
    const votes = await this.ask(UNBOUNDED, 'repair', (client) => REPAIR.run(client, [this.names.lock(key)], [lockId, ttlMs]) as Promise<number>).catch(
      () => undefined,
    );
    if (votes) this.held.renewed(lockId, votes.votesFor((answer) => answer === 1), [], undefined);
  }

  /** 0 when a majority of nodes has the key free, else the longest that can take (a cap for waiting). */
  private async msUntilFree(key: string, signal: AbortSignal): Promise<number> {
    const lockKey = this.names.lock(key);
    const votes = await this.ask(signal, 'wait', (client) => client.pttl(lockKey));
    if (votes.tooManyFailed) throw votes.failure('wait');
    // -2: no key; -1: a key without expiry (not ours), only a release or the safety poll frees it.
    const remaining = votes.answers.map((pttl) => (pttl === -2 ? 0 : pttl === -1 ? Infinity : pttl));
    remaining.push(...votes.errors.map(() => Infinity));
    remaining.sort((a, b) => a - b);
    return remaining[this.quorum - 1]!;
  }
}
