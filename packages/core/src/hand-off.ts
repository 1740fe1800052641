import { isModeRequest, isSlotRequest } from './attempt.js';
import type { GrantRequest, LockBackend } from './backend.js';
import type { Capabilities } from './types.js';

/**
 * Why a backend's locks cannot be handed to another process, or undefined when they can: a lock
 * moves with its proof only where the server checks it (a lockId) and a lease keeps it alive; where
 * a session, a connection or a process ping of the holder's provider keeps it, that provider's end
 * would end the lock under the new holder.
 */
export function handOffUnsupported(capabilities: Capabilities): string | undefined {
  if (capabilities.noHandOff !== undefined) return capabilities.noHandOff;
  if (capabilities.renewal !== 'per-lock') return "its locks live as long as the holder's session or process ping, which cannot move";
  return undefined;
}

/** handOffUnsupported, and an adapter without resumeGrant (optional) cannot take a lock over either. */
export function backendHandOffUnsupported(backend: LockBackend): string | undefined {
  return handOffUnsupported(backend.capabilities) ?? (backend.resumeGrant ? undefined : NO_RESUME_GRANT);
}

const NO_RESUME_GRANT = 'this adapter implements no resumeGrant';

/**
 * What a provider reports: an adapter without resumeGrant says so in `noHandOff`, where callers
 * (runExclusive, the suite, apps) look. The same object every time for the same capabilities.
 */
export function providerCapabilities(backend: LockBackend): Capabilities {
  const capabilities = backend.capabilities;
  if (backend.resumeGrant || handOffUnsupported(capabilities) !== undefined) return capabilities;
  let derived = DERIVED.get(capabilities);
  if (!derived) DERIVED.set(capabilities, (derived = Object.freeze({ ...capabilities, noHandOff: NO_RESUME_GRANT })));
  return derived;
}

const DERIVED = new WeakMap<Capabilities, Capabilities>();

/**
 * Why this grant cannot be handed off, checked before the handle lets go of it: a proof that no
 * process can resume would leave the key held by nobody until its lease ends.
 */
export function grantHandOffUnsupported(backend: LockBackend, request: GrantRequest): string | undefined {
  const capabilities = backend.capabilities;
  const why = backendHandOffUnsupported(backend);
  if (why !== undefined) return why;
  // A proof carries no mode: resume would rebuild a plain lock, which the key's holders are not.
  if (isModeRequest(request)) return 'read-write grants cannot be handed off yet; plain locks can';
  if (isSlotRequest(request)) return capabilities.noSlotHandOff;
  return undefined;
}
