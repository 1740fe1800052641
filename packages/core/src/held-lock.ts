import type { BackendGrant, Extension, GrantRequest } from './backend.js';
import type { BackendCaller } from './backend-caller.js';
import { ANSWER_CHECKS, CHECK_ONLY } from './contract-check.js';
import { CHANNELS, type LockEvent, type Logger, type LossReason, publish } from './diagnostics.js';
import { LockHandedOffError, LockLostError, LockNotHeldError, LockReleasedError, UnsupportedError } from './errors.js';
import { grantHandOffUnsupported } from './hand-off.js';
import type { LockProof } from './lock-proof.js';
import { renewAt, retryDelay, safetyDeadline } from './renewal-policy.js';
import type { ScheduledTask, TimerHeap } from './timer-heap.js';
import type { Lock, LockInfo } from './types.js';

import { effectiveTtl, type TtlPolicy } from './validation.js';

type State = 'held' | 'lost' | 'released' | 'handed-off';

export interface HeldLockContext {
  readonly caller: BackendCaller;
  readonly ttlPolicy: TtlPolicy;
  readonly logger: Logger | undefined;
  readonly timers: TimerHeap;
  readonly forget: (lock: HeldLock) => void;
  /** A lost grant may still exist on the server (renewal timed out, not refused): free it once it answers. */
  readonly letGo: (grant: BackendGrant, ttlMs: number) => void;
}

/** The handle a caller holds; owns the lock's renewal task and its signal. */
export class HeldLock implements Lock, ScheduledTask {
  readonly key: string;
  readonly token: bigint;
  readonly owner: string;
  readonly reason: string | undefined;
  readonly acquiredAt: Date;
  /** Created on first use of `signal`: most locks are released without anyone listening. */
  private controller: AbortController | undefined;
  /** Why the handle ended, built only when someone reads the signal (an error's stack is not free). */
  private endReason: (() => Error) | undefined;
  private lostError: LockLostError | undefined;
  private state: State = 'held';
  private leaseStart: number;
  private ttlMs: number;
  private localExpiry: number | null;
  private renewing = false;
  private lastRenewalError: unknown;
  private lostDetail = '';

  constructor(
    private readonly context: HeldLockContext,
    private readonly request: GrantRequest,
    private readonly grant: BackendGrant,
    leaseStart: number,
  ) {
    this.key = request.key;
    this.owner = request.owner;
    this.reason = request.reason;
    this.token = grant.token;
    this.acquiredAt = grant.acquiredAt;
    this.ttlMs = request.ttlMs;
    this.leaseStart = leaseStart;
    this.localExpiry = grant.expiresAt === null ? null : leaseStart + request.ttlMs;
    this.scheduleRenewal();
  }

  private get backend() {
    return this.context.caller.backend;
  }

  get lockId(): string {
    return this.request.lockId;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.endReason) this.controller.abort(this.endReason());
    }
    return this.controller.signal;
  }

  get expiresAt(): Date | null {
    return this.localExpiry === null ? null : new Date(this.localExpiry);
  }

  /** Safety first: any doubt about ownership ends here, aborting the signal with a LockLostError. */
  markLost(detail: string, cause?: unknown, mayStillExist = true, reason: LossReason = 'backend'): void {
    if (this.state !== 'held') return;
    this.state = 'lost';
    this.lostDetail = detail;
    publish(CHANNELS.lost, () => this.event({ reason, detail, cause, heldMs: Date.now() - this.acquiredAt.getTime() }));
    this.context.logger?.warn(this.event({ detail, cause }), `holdfast: lock "${this.key}" was lost: ${detail}`);
    this.context.timers.cancel(this);
    this.context.forget(this);
    if (mayStillExist) this.context.letGo(this.grant, this.ttlMs);
    const lost = new LockLostError(this.key, detail, cause);
    this.lostError = lost;
    this.end(() => lost);
  }

  /** The proof another process resumes with (provider.resume); this handle keeps holding. */
  toJSON(): LockProof {
    const why =
      this.localExpiry === null
        ? 'this lock has no lease: it lives as long as its connection'
        : grantHandOffUnsupported(this.backend, this.request);
    if (why !== undefined || this.localExpiry === null) throw new UnsupportedError(this.backend.name, 'lock hand-off', why!);
    const request = this.request as GrantRequest & { limit?: number };
    return {
      v: 1,
      backend: this.backend.name,
      key: this.key,
      lockId: this.request.lockId,
      owner: this.owner,
      token: String(this.token),
      reason: this.reason,
      acquiredAt: this.acquiredAt.toISOString(),
      expiresAt: new Date(this.localExpiry).toISOString(),
      ttlMs: this.ttlMs,
      autoRenew: this.request.autoRenew,
      ...(request.limit === undefined ? {} : { limit: request.limit }),
    };
  }

  /**
   * Gives the lock to whoever resumes the proof: this handle stops renewing and watching it, its
   * provider forgets it (close() leaves it held), and its signal aborts with a LockHandedOffError.
   * The lock then lives on its lease until the new holder resumes and renews it.
   */
  handOff(): LockProof {
    this.assertHeld();
    const proof = this.toJSON();
    this.state = 'handed-off';
    this.context.timers.cancel(this);
    this.context.forget(this);
    publish(CHANNELS.handOff, () => this.event({ heldMs: Date.now() - this.acquiredAt.getTime() }));
    this.end(() => new LockHandedOffError(this.key));
    return proof;
  }

  /** Frees this handle's record in the background (owner-checked) once the backend answers. */
  letGo(): void {
    this.context.letGo(this.grant, this.ttlMs);
  }

  async extend(ttlMs?: number): Promise<void> {
    this.assertHeld();
    const ttl = ttlMs === undefined ? this.ttlMs : effectiveTtl(ttlMs, this.backend.capabilities, this.context.ttlPolicy);
    const started = Date.now();
    const result = await this.context.caller.run('extend', (call) => this.grant.extend(ttl, call), CHECK_ONLY.extend);
    if (!result.held) {
      this.markLost('the backend no longer has it for this holder', undefined, true, 'not-held');
      throw new LockLostError(this.key, 'the backend no longer has it for this holder');
    }
    this.assertHeld();
    this.renewed(started, ttl, result);
  }

  /**
   * Frees the lock if this handle still holds it. A release the backend does not confirm (failed,
   * or no answer before `deadline`) ends the handle as lost, not released: nobody can tell whether
   * the record is gone, so the holder must not assume it is.
   */
  release(): Promise<void> {
    return this.releaseBefore(undefined);
  }

  /** release() for close(): gives up waiting for the backend at `deadline`. */
  async releaseBefore(deadline: number | undefined): Promise<void> {
    // A handed-off lock is someone else's to release now.
    if (this.state === 'released' || this.state === 'handed-off') return;
    const bounds = deadline === undefined ? CHECK_ONLY.release : { deadline, check: ANSWER_CHECKS.release };
    if (this.state === 'lost') {
      // The loss may have been declared out of caution while the record still exists: free it if
      // it is still ours (the backend checks ownership), so others need not wait for it to expire.
      this.state = 'released';
      await this.context.caller.run('release', (call) => this.grant.release(call), bounds).catch(() => undefined);
      return;
    }
    this.state = 'released';
    this.context.timers.cancel(this);
    this.context.forget(this);
    const heldMs = Date.now() - this.acquiredAt.getTime();
    try {
      await this.context.caller.run('release', (call) => this.grant.release(call), bounds);
    } catch (error) {
      publish(CHANNELS.release, () => this.event({ heldMs, confirmed: false, error }));
      this.context.logger?.warn(this.event({ error }), `holdfast: release of lock "${this.key}" was not confirmed`);
      // A session or heartbeat may keep the record alive: keep trying to free it once the server answers.
      this.context.letGo(this.grant, this.ttlMs);
      const unconfirmed = new LockLostError(this.key, 'its release was not confirmed by the backend', error);
      this.end(() => unconfirmed);
      throw error;
    }
    publish(CHANNELS.release, () => this.event({ heldMs, confirmed: true }));
    this.end(() => new LockReleasedError(this.key));
  }

  async isHeld(): Promise<boolean> {
    if (this.state !== 'held') return false;
    const held = await this.context.caller.run('isHeld', (call) => this.grant.isHeld(call), CHECK_ONLY.isHeld);
    if (!held) this.markLost('the backend no longer has it for this holder', undefined, true, 'not-held');
    return held && this.state === 'held';
  }

  /** What list() would say about this lock, from this process's own knowledge. */
  info(): LockInfo {
    return {
      key: this.key,
      owner: this.owner,
      reason: this.reason,
      acquiredAt: this.acquiredAt,
      expiresAt: this.expiresAt,
      token: this.token,
    };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }

  /** Renewal tick (or renewal watchdog), run by the provider's single timer. */
  run(): void {
    if (this.state !== 'held') return;
    const deadline = safetyDeadline(this.leaseStart, this.ttlMs);
    if (Date.now() >= deadline) {
      // A renewal still in flight at the deadline proves nothing: stop trusting the lock now. A lease
      // nobody renewed (autoRenew: false) simply runs out on the server; nothing keeps it alive.
      if (!this.request.autoRenew) this.markLost('its lease ran out (autoRenew: false)', undefined, false, 'lease-expired');
      else this.markLost('renewal did not succeed before the lease ran out', this.lastRenewalError, true, 'renewal-failed');
      return;
    }
    if (this.renewing) this.context.timers.schedule(this, deadline);
    else void this.renew(deadline);
  }

  private async renew(deadline: number): Promise<void> {
    this.renewing = true;
    this.context.timers.schedule(this, deadline);
    const started = Date.now();
    const ttl = this.ttlMs;
    try {
      // A renewal that has not answered by the safety deadline proves nothing: stop waiting for it.
      const result = await this.context.caller.run('renew', (call) => this.grant.extend(ttl, call), {
        key: this.key,
        deadline,
        deadlineIsOwn: true,
        check: ANSWER_CHECKS.extend,
      });
      if (this.state !== 'held') return;
      if (!result.held) {
        this.markLost('renewal found the lock held by someone else or gone', undefined, true, 'not-held');
        return;
      }
      this.renewed(started, ttl, result);
      publish(CHANNELS.renew, () => this.event({ ttlMs: ttl, expiresAt: this.expiresAt }));
    } catch (error) {
      if (this.state !== 'held') return;
      this.lastRenewalError = error;
      publish(CHANNELS.renewFailed, () => this.event({ error, deadline: new Date(deadline) }));
      this.context.logger?.warn(this.event({ error }), `holdfast: renewal of lock "${this.key}" failed; retrying until the lease runs out`);
      this.context.timers.schedule(this, Math.min(Date.now() + retryDelay(ttl), deadline));
    } finally {
      this.renewing = false;
    }
  }

  private event(fields: Record<string, unknown>): LockEvent {
    return { backend: this.backend.name, owner: this.owner, key: this.key, token: this.token, lockId: this.lockId, ...fields };
  }

  private end(reason: () => Error): void {
    this.endReason = reason;
    this.controller?.abort(reason());
  }

  private renewed(started: number, ttl: number, result: Extension & { held: true }): void {
    this.leaseStart = started;
    this.ttlMs = ttl;
    this.localExpiry = result.expiresAt === null ? null : started + ttl;
    this.lastRenewalError = undefined;
    this.scheduleRenewal();
  }

  private scheduleRenewal(): void {
    const perLock = this.backend.capabilities.renewal === 'per-lock';
    if (this.request.autoRenew && perLock) {
      this.context.timers.schedule(this, renewAt(this.leaseStart, this.ttlMs));
    } else if (!this.request.autoRenew && this.localExpiry !== null) {
      // Without auto-renewal the only scheduled event is the lease's end, where run() reports the loss.
      this.context.timers.schedule(this, safetyDeadline(this.leaseStart, this.ttlMs));
    }
  }

  private assertHeld(): void {
    if (this.state === 'lost') {
      throw new LockLostError(this.key, this.lostDetail, this.lostError?.cause);
    }
    if (this.state === 'released') throw new LockNotHeldError(this.key, 'already released');
    if (this.state === 'handed-off') throw new LockNotHeldError(this.key, 'handed off (handOff) to another holder');
  }
}
