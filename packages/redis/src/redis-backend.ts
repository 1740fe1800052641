import { BackendError, type Capabilities, type LockInfo } from '@holdfast/core';
import { linkedController, sleep, type Grant, type GrantRequest, type LockBackend, type WaitOptions } from '@holdfast/core/backend';
import { QUORUM_CAPABILITIES, SINGLE_NODE_CAPABILITIES } from './capabilities.js';
import type { Redis } from 'ioredis';
import type { KeyNames } from './key-names.js';
import { inspectionOf, type InspectReply } from './inspection.js';
import type { RedisNode } from './redis-node.js';
import { ReleaseListener } from './release-listener.js';
import { ACQUIRE, EXTEND, FORCE_RELEASE, INSPECT, RELEASE, REPAIR } from './scripts.js';
import { poll, type Votes } from './votes.js';

export interface RedisBackendSettings {
  /** Longest wait between checks while a key is busy, in case a wake-up was missed. */
  readonly safetyPollMs: number;
  /** Quorum mode: clock drift allowance per ms of TTL (redlock: 0.01, plus 2 ms). */
  readonly driftFactor: number;
  /** Quorum mode: extra attempts after a split vote (no majority for anyone), with random delays. */
  readonly splitVoteRetries: number;
  readonly retryJitterMs: number;
}

/** ACQUIRE's answer: [1, token, acquiredAtMs] when granted, [0] or [0, counter] when busy. */
type AcquireReply = [code: 0 | 1, token?: string, acquiredAtMs?: string];

/** Margin after a holder's PTTL before re-checking, so the key has certainly expired on the server. */
const EXPIRY_MARGIN_MS = 5;

/**
 * Locks on one Redis server, or with the Redlock algorithm on several independent ones: the same
 * scripts run on every node and an operation counts when a majority agrees. With one node the
 * majority is that node and there is no clock-drift allowance.
 */
export class RedisBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: Capabilities;
  private readonly quorum: number;
  private readonly listener: ReleaseListener;

  constructor(
    private readonly nodes: readonly RedisNode[],
    private readonly names: KeyNames,
    private readonly settings: RedisBackendSettings,
  ) {
    this.quorum = Math.floor(nodes.length / 2) + 1;
    this.capabilities = nodes.length === 1 ? SINGLE_NODE_CAPABILITIES : QUORUM_CAPABILITIES;
    this.listener = new ReleaseListener(nodes);
  }

  private get isQuorum(): boolean {
    return this.nodes.length > 1;
  }

  async tryGrant(request: GrantRequest): Promise<Grant | null> {
    const keys = this.keysOf(request.key);
    const reason = request.reason === undefined ? ['', '0'] : [request.reason, '1'];
    const args = [request.lockId, request.ttlMs, request.owner, ...reason, this.isQuorum ? '1' : '0'];
    for (let attempt = 0; ; attempt++) {
      const started = Date.now();
      const votes = await this.ask((client) => ACQUIRE.run(client, keys, args) as Promise<AcquireReply>);
      const granted = votes.count(([code]) => code === 1);
      if (granted >= this.quorum && this.validity(request.ttlMs, started) > 0) {
        return this.grantOf(votes.answers, started, request.ttlMs);
      }
      if (granted > 0 || votes.errors.length > 0) await this.rollback(request.key, request.lockId);
      if (votes.tooManyFailed) throw votes.failure('acquire');
      const busy = votes.count(([code]) => code === 0);
      if (busy >= this.quorum || attempt >= this.settings.splitVoteRetries) return null;
      // A split vote: contenders each hold a minority. Retry after a random pause so one of them wins.
      await sleep(Math.random() * this.settings.retryJitterMs);
    }
  }

  async waitForChange(key: string, { signal, timeoutMs }: WaitOptions): Promise<void> {
    if (signal.aborted) return;
    const watch = await this.listener.watch([this.names.releaseChannel(key), this.names.keyspaceChannel(key)]);
    try {
      // Checked after subscribing: a release between the caller's attempt and the subscription is seen here.
      const freeInMs = await this.msUntilFree(key);
      if (freeInMs === 0) return;
      const capMs = Math.min(timeoutMs, freeInMs + EXPIRY_MARGIN_MS, this.settings.safetyPollMs);
      const timer = linkedController(signal);
      try {
        await Promise.race([watch.changed, sleep(capMs, timer.controller.signal).catch(() => undefined)]);
      } finally {
        timer.controller.abort();
        timer.dispose();
      }
    } finally {
      watch.stop();
    }
  }

  async extend(key: string, lockId: string, ttlMs: number): Promise<Date | null | undefined> {
    const keys = this.keysOf(key);
    const started = Date.now();
    const votes = await this.ask((client) => EXTEND.run(client, keys, [lockId, ttlMs]) as Promise<number>);
    const extended = votes.count((answer) => answer === 1);
    if (extended >= this.quorum) {
      if (this.validity(ttlMs, started) <= 0) throw new BackendError('redis', 'extend: the quorum answered too late for the lease');
      if (this.isQuorum && extended < this.nodes.length) await this.repair(key, lockId, ttlMs);
      return new Date(started + ttlMs);
    }
    // Lost only when enough nodes positively deny it; otherwise we cannot tell, and core retries.
    const denied = votes.count((answer) => answer !== 1);
    if (denied > this.nodes.length - this.quorum) return undefined;
    throw votes.failure('extend');
  }

  async release(key: string, lockId: string): Promise<boolean> {
    const channel = this.names.releaseChannel(key);
    const votes = await this.ask((client) => RELEASE.run(client, this.keysOf(key), [lockId, channel]) as Promise<number>);
    if (votes.count((answer) => answer === 1) > 0) return true;
    if (votes.tooManyFailed) throw votes.failure('release');
    return false;
  }

  async isHeld(key: string, lockId: string): Promise<boolean> {
    const lockKey = this.names.lock(key);
    const votes = await this.ask((client) => client.get(lockKey));
    const held = votes.count((value) => value === lockId);
    if (held >= this.quorum) return true;
    if (votes.answers.length - held > this.nodes.length - this.quorum) return false;
    throw votes.failure('isHeld');
  }

  async inspect(key: string): Promise<LockInfo | null> {
    const votes = await this.ask((client) => INSPECT.run(client, this.keysOf(key), []) as Promise<InspectReply | null>);
    if (votes.tooManyFailed) throw votes.failure('inspect');
    return inspectionOf(key, votes.answers, this.quorum, this.nodes.length);
  }

  async forceRelease(key: string): Promise<boolean> {
    const channel = this.names.releaseChannel(key);
    const votes = await this.ask((client) => FORCE_RELEASE.run(client, this.keysOf(key), [channel]) as Promise<number>);
    if (votes.tooManyFailed) throw votes.failure('forceRelease');
    return votes.count((answer) => answer === 1) > 0;
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.close()));
  }

  /** Runs `operation` on every node at once; a node that is not connected answers with an error. */
  private ask<T>(operation: (client: Redis) => Promise<T>): Promise<Votes<T>> {
    return poll(this.nodes, this.quorum, async (node) => operation(await node.ready()));
  }

  private keysOf(key: string): [string, string] {
    return [this.names.lock(key), this.names.meta(key)];
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

  /** Undoes a partial grant everywhere, including nodes whose answer was lost. Best effort. */
  private async rollback(key: string, lockId: string): Promise<void> {
    await this.release(key, lockId).catch(() => undefined);
  }

  /** Puts the key back on nodes that forgot it (a restart without persistence) while we hold a majority. */
  private async repair(key: string, lockId: string, ttlMs: number): Promise<void> {
    await this.ask((client) => REPAIR.run(client, [this.names.lock(key)], [lockId, ttlMs]));
  }

  /** 0 when a majority of nodes has the key free, else the longest that can take (a cap for waiting). */
  private async msUntilFree(key: string): Promise<number> {
    const lockKey = this.names.lock(key);
    const votes = await this.ask((client) => client.pttl(lockKey));
    if (votes.tooManyFailed) throw votes.failure('wait');
    // -2: no key; -1: a key without expiry (not ours), only a release or the safety poll frees it.
    const remaining = votes.answers.map((pttl) => (pttl === -2 ? 0 : pttl === -1 ? Infinity : pttl));
    remaining.push(...votes.errors.map(() => Infinity));
    remaining.sort((a, b) => a - b);
    return remaining[this.quorum - 1]!;
  }
}
