import { LOCK_FLAG } from './constants.js';
import { ConsulGrant, type GrantContext, type Move } from './grant.js';
import { readKey } from './kv.js';
import { whyNotGrant } from './ownership.js';
import { releaseExact } from './release.js';
import type { GrantSession } from './sessions.js';
import type { SnapshotView } from './watch.js';

/**
 * One lock this provider holds on `<prefix>/<key>`: the session that holds it and the ModifyIndex of
 * its write (the fencing token, which is also how a release tells this grant from a later one of the
 * same session).
 */
export class LockGrant extends ConsulGrant {
  constructor(
    context: GrantContext,
    readonly consulKey: string,
    readonly lockId: string,
    session: GrantSession,
    token: bigint,
    acquiredAt: Date,
    expiresAt: Date | null,
    reportLost: (detail: string, cause?: unknown) => void,
  ) {
    super(context, session, token, acquiredAt, expiresAt, reportLost, token);
    this.watch();
  }

  get watchKey(): string {
    return this.consulKey;
  }

  lossIn(view: SnapshotView): string | undefined {
    return whyNotGrant(view.entry(this.consulKey), this);
  }

  protected async check(signal: AbortSignal): Promise<string | undefined> {
    const { entry } = await readKey(this.context.http, this.consulKey, true, signal);
    return whyNotGrant(entry, this);
  }

  protected free(signal: AbortSignal): Promise<boolean> {
    return releaseExact(this.context.http, this, signal);
  }

  /** `check-index` + `unlock` + `lock` in one transaction: sets no lock-delay, and nobody can take the key in between. */
  protected async planMove(next: GrantSession, signal: AbortSignal): Promise<Move | string> {
    const { entry } = await readKey(this.context.http, this.consulKey, true, signal);
    const loss = whyNotGrant(entry, this);
    if (loss !== undefined || !entry) return loss ?? 'the key was deleted';
    const value = entry.Value ?? '';
    return {
      ops: [
        { Verb: 'check-index', Key: this.consulKey, Index: entry.ModifyIndex },
        { Verb: 'unlock', Key: this.consulKey, Session: this.session.id, Flags: LOCK_FLAG, Value: value },
        { Verb: 'lock', Key: this.consulKey, Session: next.id, Flags: LOCK_FLAG, Value: value },
      ],
      indexKey: this.consulKey,
    };
  }
}
