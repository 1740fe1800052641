import type { GrantRequest, LockBackend, SlotRequest } from './backend.js';
import { ANSWER_CHECKS, CHECK_ONLY } from './contract-check.js';
import { InvalidArgumentError, LockLostError, UnsupportedError } from './errors.js';
import { backendHandOffUnsupported } from './hand-off.js';
import { HeldLock, type HeldLockContext } from './held-lock.js';
import type { LockProof } from './lock-proof.js';
import type { Lock } from './types.js';
import { effectiveTtl, type TtlPolicy, validateKey, validateLimit } from './validation.js';

export interface ResumeContext {
  readonly backend: LockBackend;
  readonly ttlPolicy: TtlPolicy;
  readonly lockContext: HeldLockContext;
  readonly adopt: (handle: HeldLock) => void;
}

const GONE = 'it was released, lost or taken over before it was resumed';

/**
 * Takes over a lock another handle gave away (lock.handOff() / toJSON()): the adapter rebuilds the
 * grant from the proof, and core renews it at once, owner-checked by the grant's lockId, so a lock
 * that was lost or released in between is a LockLostError and never a second holder. The fencing
 * token is checked against the backend's holder. The lease starts afresh (ttlMs) on this process's
 * clock: the handing process's expiresAt was timed on another clock.
 */
export async function resumeLock(context: ResumeContext, input: unknown): Promise<Lock> {
  const { backend } = context;
  const proof = parseProof(input, backend.name);
  const why = backendHandOffUnsupported(backend);
  if (why !== undefined) throw new UnsupportedError(backend.name, 'lock resume', why);
  const ttlMs = effectiveTtl(proof.ttlMs, backend.capabilities, context.ttlPolicy, 'proof.ttlMs');
  const token = BigInt(proof.token);
  let handle: HeldLock | undefined;
  let pendingLoss: { detail: string; cause: unknown } | undefined;
  const base: GrantRequest = {
    key: proof.key,
    lockId: proof.lockId,
    owner: proof.owner,
    reason: proof.reason,
    ttlMs,
    autoRenew: proof.autoRenew,
    onLost: (detail, cause) => {
      if (handle) handle.markLost(detail, cause);
      else pendingLoss = { detail, cause };
    },
  };
  const request: GrantRequest | SlotRequest = proof.limit === undefined ? base : { ...base, limit: proof.limit };
  const caller = context.lockContext.caller;
  const held = { token, acquiredAt: new Date(proof.acquiredAt) };
  const grant = await caller.run('resume', (call) => backend.resumeGrant!(request, held, call));
  const leaseStart = Date.now();
  const renewed = await caller.run('resume', (call) => grant.extend(ttlMs, call), CHECK_ONLY.extend);
  if (!renewed.held) throw new LockLostError(proof.key, GONE);
  const holders =
    proof.limit === undefined
      ? [await caller.run('inspect', (call) => backend.inspect(proof.key, call), { check: ANSWER_CHECKS.inspect })]
      : await caller.run('holders', (call) => backend.slotHolders!(proof.key, call), { check: ANSWER_CHECKS.slotHolders });
  if (!holders.some((holder) => holder?.token === token)) {
    throw new LockLostError(proof.key, `the backend's holder has another fencing token than the proof's ${proof.token}`);
  }
  handle = new HeldLock(context.lockContext, request, grant, leaseStart);
  context.adopt(handle);
  if (pendingLoss) handle.markLost(pendingLoss.detail, pendingLoss.cause);
  return handle;
}

/** A proof as handOff() made it, or its JSON text; anything else is an InvalidArgumentError. */
function parseProof(input: unknown, backend: string): LockProof {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch {
      throw new InvalidArgumentError('proof', 'not JSON: expected what lock.handOff() returned');
    }
  }
  const proof = value as Partial<LockProof> | null;
  const bad = (detail: string): InvalidArgumentError => new InvalidArgumentError('proof', detail);
  if (proof === null || typeof proof !== 'object') throw bad('expected what lock.handOff() returned');
  if (proof.v !== 1) throw bad(`unknown version ${String(proof.v)}`);
  if (proof.backend !== backend) throw bad(`it is a ${String(proof.backend)} lock; this provider is ${backend}`);
  validateKey(proof.key);
  if (typeof proof.lockId !== 'string' || proof.lockId === '') throw bad('no lockId');
  if (typeof proof.owner !== 'string') throw bad('no owner');
  if (typeof proof.token !== 'string' || !/^\d{1,30}$/.test(proof.token)) throw bad('the token is no decimal number');
  if (typeof proof.acquiredAt !== 'string' || Number.isNaN(Date.parse(proof.acquiredAt))) throw bad('acquiredAt is no date');
  if (proof.reason !== undefined && typeof proof.reason !== 'string') throw bad('the reason is no string');
  if (typeof proof.autoRenew !== 'boolean') throw bad('autoRenew is no boolean');
  if (proof.limit !== undefined) validateLimit(proof.limit);
  return proof as LockProof;
}
