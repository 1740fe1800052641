import { SEMAPHORE_FLAG } from './constants.js';
import { ConsulGrant, type GrantContext, type Move } from './grant.js';
import { decodeLockValue, decodeValue, encodeLockValue, readEntries } from './kv.js';
import { contenderKey, encodeRecord, type SemaphorePlace, type SemaphoreState, semaphoreState, whyNotHolder } from './semaphore-record.js';
import type { GrantSession } from './sessions.js';
import { leaveSemaphore } from './slot-release.js';
import type { SnapshotView } from './watch.js';

/**
 * One slot of a semaphore this provider holds: its own session, named among the coordination
 * record's holders and holding its contender entry `<dir>/<session>`. Held while both are true, as
 * Go's monitorLock decides; watched on the semaphore's directory.
 */
export class SlotGrant extends ConsulGrant {
  constructor(
    context: GrantContext,
    private readonly place: SemaphorePlace,
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
    return this.place.dir;
  }

  lossIn(view: SnapshotView): string | undefined {
    return whyNotHolder(semaphoreState(this.place.dir, view.under(this.place.dir)), this.session.id);
  }

  protected async check(signal: AbortSignal): Promise<string | undefined> {
    return whyNotHolder(await this.read(signal), this.session.id);
  }

  protected free(signal: AbortSignal): Promise<boolean> {
    return leaveSemaphore(this.context.http, this.place, this.session.id, signal);
  }

  /**
   * Holders are named by session, so the slot moves whole: the new session's contender entry (carrying
   * the token, which its new ModifyIndex no longer shows), the record with the new session in place of
   * the old by check-and-set, and the old contender entry deleted, in one transaction.
   */
  protected async planMove(next: GrantSession, signal: AbortSignal): Promise<Move | string> {
    const state = await this.read(signal);
    const loss = whyNotHolder(state, this.session.id);
    if (loss !== undefined) return loss;
    const contender = state.bySession.get(this.session.id)!;
    const value = decodeLockValue(decodeValue(contender));
    const moved = value ? encodeLockValue({ ...value, token: this.token.toString() }) : (contender.Value ?? '');
    const holders = state.holders.map((holder) => (holder === this.session.id ? next.id : holder));
    return {
      ops: [
        { Verb: 'lock', Key: contenderKey(this.place.dir, next.id), Session: next.id, Flags: SEMAPHORE_FLAG, Value: moved },
        {
          Verb: 'cas',
          Key: this.place.coordinationKey,
          Index: state.entry!.ModifyIndex,
          Flags: SEMAPHORE_FLAG,
          Value: encodeRecord(state.limit!, holders),
        },
        { Verb: 'delete', Key: contender.Key },
      ],
      indexKey: this.place.coordinationKey,
    };
  }

  private async read(signal: AbortSignal): Promise<SemaphoreState> {
    const { entries } = await readEntries(this.context.http, this.place.dir, { recurse: true, consistent: true, signal });
    return semaphoreState(this.place.dir, entries);
  }
}
