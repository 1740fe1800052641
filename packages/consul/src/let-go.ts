import { sleep } from '@holdfast/core/backend';
import { type ConsulHttp, ConsulHttpError } from './consul-http.js';
import { RENEW_RETRY_MS } from './constants.js';
import { readKey, transact } from './kv.js';
import { type GrantProof, provesGrant } from './ownership.js';

/** Compare-and-set rounds before a key that keeps changing is left to its session's fate. */
const MAX_CAS_ROUNDS = 3;

/**
 * Frees the key if it still holds exactly this grant, with no lock-delay and nothing left behind:
 * `[check-index, unlock, delete]` in one transaction. False when the key is not (any more) this grant.
 */
export async function releaseExact(http: ConsulHttp, grant: GrantProof, signal: AbortSignal): Promise<boolean> {
  let index = grant.token;
  for (let round = 0; round < MAX_CAS_ROUNDS; round++) {
    if (index !== undefined) {
      const result = await transact(http, [
        { Verb: 'check-index', Key: grant.consulKey, Index: Number(index) },
        { Verb: 'unlock', Key: grant.consulKey, Session: grant.session },
        { Verb: 'delete', Key: grant.consulKey },
      ], signal);
      if (result.ok) return true;
    }
    // The index moved (or was never known): only the grant's own lockId, under its session, proves it.
    const { entry } = await readKey(http, grant.consulKey, true, signal);
    if (!entry || !provesGrant(entry, { ...grant, token: undefined })) return false;
    index = BigInt(entry.ModifyIndex);
  }
  return false;
}

/**
 * Lets go, in the background, of grants nobody holds any more but the server may still keep: lost
 * grants, acquires whose answer never came, orphans seen by the watch. Each is retried every second
 * until the server answers (or refuses for good), then `afterward` runs (destroy an own session,
 * leave a shared one). One task per grant (session and lockId).
 */
export class Releaser {
  private readonly pending = new Map<string, Promise<void>>();

  constructor(
    private readonly http: ConsulHttp,
    private readonly callTimeoutMs: number,
    private readonly stop: AbortSignal,
  ) {}

  letGo(grant: GrantProof, afterward?: () => Promise<void> | void): void {
    const id = `${grant.session} ${grant.lockId}`;
    if (this.pending.has(id)) return;
    const task = this.run(grant)
      .then(() => afterward?.())
      .catch(() => undefined)
      .finally(() => this.pending.delete(id));
    this.pending.set(id, task);
  }

  /** Resolves when every task is done, or when `signal` aborts. */
  async drain(signal: AbortSignal): Promise<void> {
    while (this.pending.size > 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const onAbort = (): void => resolve();
        signal.addEventListener('abort', onAbort, { once: true });
        void Promise.allSettled(this.pending.values()).then(() => (signal.removeEventListener('abort', onAbort), resolve()));
      });
    }
  }

  private async run(grant: GrantProof): Promise<void> {
    while (!this.stop.aborted) {
      try {
        await releaseExact(this.http, grant, AbortSignal.any([this.stop, AbortSignal.timeout(this.callTimeoutMs)]));
        return;
      } catch (error) {
        if (error instanceof ConsulHttpError && !error.retryable) return;
        await sleep(RENEW_RETRY_MS, this.stop).catch(() => undefined);
      }
    }
  }
}
