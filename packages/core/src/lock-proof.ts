/**
 * A held lock's proof of ownership, as `lock.handOff()` / `lock.toJSON()` give it: plain JSON (the
 * token as a decimal string), to pass to another process, which takes the lock over with
 * `provider.resume(proof)`. Whoever has it can release the lock: treat it like a credential.
 */
export interface LockProof {
  /** The format's version; resume() refuses another. */
  readonly v: 1;
  /** The backend's name (`redis`, `memory`, ...): a proof resumes only on the same backend. */
  readonly backend: string;
  readonly key: string;
  /** The grant's ownership proof on the server (what release and extend are checked against). */
  readonly lockId: string;
  readonly owner: string;
  /** The fencing token, decimal. */
  readonly token: string;
  readonly reason: string | undefined;
  readonly acquiredAt: string;
  /** The lease's end as the handing process knew it (ISO). */
  readonly expiresAt: string;
  /** The TTL the resumed handle renews with. */
  readonly ttlMs: number;
  readonly autoRenew: boolean;
  /** A semaphore slot's limit; absent for a plain lock. */
  readonly limit?: number;
}
