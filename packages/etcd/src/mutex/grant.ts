import {
  type BackendGrant,
  type CallContext,
  type Extension,
  type GrantRequest,
  isSlotRequest,
  NOT_HELD,
  pause,
  stillHeld,
} from '@holdfast/core/backend';
import type { EtcdContext } from '../context.js';
import { encodeEntry } from '../entry.js';
import type { Joined } from '../join.js';
import { deleteIfCreatedAt, range, txn } from '../kv.js';
import type { Session } from '../session.js';

/** Pause before watching a holder's entry again after the watch stream broke. */
const REWATCH_MS = 500;

/**
 * A held entry: the lock (or slot) is this entry while it exists with its create revision (a
 * lower entry can never appear later, so once the oldest it stays the holder until deleted).
 * Loss is pushed: the session's lease lost (keep-alive failed, expired, revoked), or the entry
 * deleted by someone else (forceRelease, `etcdctl del`), which a watch on the entry reports.
 */
export class EtcdGrant implements BackendGrant {
  readonly acquiredAt: Date;
  expiresAt: Date | null;
  private session: Session;
  private stopLossWatch: () => void = () => undefined;
  private ended = false;

  private constructor(
    private readonly ctx: EtcdContext,
    private readonly request: GrantRequest,
    private readonly name: Buffer,
    private readonly createRevision: string,
    readonly token: bigint,
    joined: Joined,
  ) {
    this.session = joined.session;
    this.acquiredAt = new Date(joined.at);
    this.expiresAt = request.autoRenew ? null : new Date(joined.at + request.ttlMs);
  }

  /** A grant that reports its loss from now on; a lock without auto-renewal moves to a lease of its own. */
  static async start(ctx: EtcdContext, request: GrantRequest, joined: Joined, token: bigint, signal: AbortSignal): Promise<EtcdGrant> {
    const grant = new EtcdGrant(ctx, request, joined.entry.key, joined.entry.create_revision, token, joined);
    if (!request.autoRenew) {
      const own = await ctx.sessions.single(request.ttlMs, signal);
      if (!(await grant.moveTo(own, joined.at + request.ttlMs, signal))) {
        await ctx.sessions.drop(own, ctx.background());
        // Gone between the two writes (forced release, lease lost): tell the holder at once.
        queueMicrotask(() => request.onLost('the entry vanished while it was moved to its own lease'));
      }
    }
    grant.watchSession();
    grant.watchEntry(joined.revision);
    return grant;
  }

  /**
   * A lock with auto-renewal stays on its session (a new TTL moves it to the session of that TTL);
   * one without gets a new lease of `ttlMs`. Both keep the entry's create revision, so its place.
   */
  async extend(ttlMs: number, call: CallContext): Promise<Extension> {
    const until = Date.now() + ttlMs;
    const target = this.request.autoRenew
      ? await this.ctx.sessions.shared(ttlMs, call.signal)
      : await this.ctx.sessions.single(ttlMs, call.signal);
    if (target === this.session) return (await this.isHeld(call)) ? stillHeld(null) : NOT_HELD;
    if (!(await this.moveTo(target, this.request.autoRenew ? undefined : until, call.signal))) {
      await this.ctx.sessions.drop(target, this.ctx.background());
      return NOT_HELD;
    }
    this.watchSession();
    this.expiresAt = this.request.autoRenew ? null : new Date(until);
    return stillHeld(this.expiresAt);
  }

  async release(call: CallContext): Promise<boolean> {
    this.end();
    const freed = await deleteIfCreatedAt(this.ctx.rpc, this.name, this.createRevision, call.signal);
    await this.ctx.sessions.drop(this.session, call.signal);
    return freed;
  }

  async isHeld(call: CallContext): Promise<boolean> {
    if (!this.session.alive) return false;
    const res = await range(this.ctx.rpc, { key: this.name }, call.signal);
    return res.kvs[0]?.create_revision === this.createRevision;
  }

  /** Re-attaches the entry to `target`'s lease if it is still this grant's; the old one-off lease is revoked. */
  private async moveTo(target: Session, until: number | undefined, signal: AbortSignal): Promise<boolean> {
    const { owner, reason, lockId } = this.request;
    const limit = isSlotRequest(this.request) ? this.request.limit : undefined;
    const value = encodeEntry({
      owner,
      ...(reason === undefined ? {} : { reason }),
      lockId,
      // A slot's token is the revision of its granting write, which this write replaces.
      ...(limit === undefined ? {} : { limit, token: String(this.token) }),
      at: this.acquiredAt.getTime(),
      ...(until === undefined ? {} : { until }),
    });
    const res = await txn(
      this.ctx.rpc,
      [{ key: this.name, target: 'CREATE', result: 'EQUAL', create_revision: this.createRevision }],
      [{ request_put: { key: this.name, value, lease: target.id } }],
      [],
      signal,
    );
    if (!res.succeeded) return false;
    const old = this.session;
    this.session = target;
    void this.ctx.sessions.drop(old, this.ctx.background());
    return true;
  }

  private stopSessionWatch: () => void = () => undefined;

  private watchSession(): void {
    this.stopSessionWatch();
    const session = this.session;
    this.stopSessionWatch = session.onLost((detail, cause) => {
      if (this.session === session) this.lost(detail, cause);
    });
  }

  /** Watches the entry for its deletion from `afterRevision` on; a broken watch is made again from there. */
  private watchEntry(afterRevision: string): void {
    if (this.ended) return;
    this.stopLossWatch = this.ctx.watcher.watch(
      { key: this.name, startRevision: String(BigInt(afterRevision) + 1n), deletesOnly: true },
      {
        onEvent: () => this.lost(`its entry ${this.name.toString()} was deleted (forced release or another client)`),
        onBroken: () => {
          if (this.ended || this.ctx.closing.aborted) return;
          void pause(REWATCH_MS, this.ctx.closing, false).then(() => this.rewatch(afterRevision));
        },
      },
    );
  }

  /** After a broken watch: still there, watch again; gone (compacted past the deletion too), lost. */
  private async rewatch(afterRevision: string): Promise<void> {
    if (this.ended || this.ctx.closing.aborted) return;
    try {
      const res = await range(this.ctx.rpc, { key: this.name }, this.ctx.background());
      if (res.kvs[0]?.create_revision !== this.createRevision) return this.lost(`its entry ${this.name.toString()} is gone`);
      this.watchEntry(afterRevision);
    } catch {
      // etcd unreachable: the session's keep-alive deadline decides; try the watch again later.
      void pause(REWATCH_MS, this.ctx.closing, false).then(() => this.rewatch(afterRevision));
    }
  }

  private lost(detail: string, cause?: unknown): void {
    if (this.ended) return;
    this.end();
    this.request.onLost(detail, cause);
  }

  private end(): void {
    this.ended = true;
    this.stopLossWatch();
    this.stopSessionWatch();
  }
}
