import { AdapterContractError } from './errors.js';

/**
 * The rules an adapter's answers must keep. Core checks each answer where it already waits for it
 * (BackendCaller, through a call's `check`), so checking costs no promise of its own; each check
 * returns undefined for a good answer, so the hot path allocates nothing and only a broken rule
 * builds a Breach.
 */

/** One broken rule: what the contract asks of the answer, and the part of it that broke the rule. */
export interface Breach {
  readonly rule: string;
  readonly value: unknown;
}

const OUTCOME = 'resolve to granted(grant) or busy(wake)';
const EXTENSION = 'resolve to stillHeld(expiresAt) or NOT_HELD';

/** tryGrant / tryGrantSlot: `{ granted: false, wake }`, or `{ granted: true, grant }` with a good grant. */
export function outcomeBreach(outcome: unknown): Breach | undefined {
  if (typeof outcome !== 'object' || outcome === null) return { rule: OUTCOME, value: outcome };
  const granted = (outcome as { granted?: unknown }).granted;
  if (granted === false) return undefined;
  if (granted !== true) return { rule: OUTCOME, value: outcome };
  return grantBreach((outcome as { grant?: unknown }).grant);
}

/** A BackendGrant: a positive bigint token, valid dates, and the three methods core calls. */
function grantBreach(grant: unknown): Breach | undefined {
  if (typeof grant !== 'object' || grant === null) return { rule: 'resolve to granted(grant) with a grant object', value: grant };
  const { token, acquiredAt, expiresAt, extend, release, isHeld } = grant as Record<string, unknown>;
  // Fencing compares tokens, and 0n is what inspection shows for a holder that is not Holdfast's.
  if (typeof token !== 'bigint' || token <= 0n) return { rule: 'resolve to a grant whose token is a bigint above 0n', value: token };
  if (!isValidDate(acquiredAt)) return { rule: 'resolve to a grant whose acquiredAt is a valid Date', value: acquiredAt };
  if (expiresAt !== null && !isValidDate(expiresAt)) {
    return { rule: 'resolve to a grant whose expiresAt is a valid Date or null', value: expiresAt };
  }
  if (typeof extend !== 'function') return { rule: 'resolve to a grant with an extend(ttlMs, call) method', value: extend };
  if (typeof release !== 'function') return { rule: 'resolve to a grant with a release(call) method', value: release };
  if (typeof isHeld !== 'function') return { rule: 'resolve to a grant with an isHeld(call) method', value: isHeld };
  return undefined;
}

/** grant.extend: `{ held: true, expiresAt: Date | null }` or `{ held: false }`. */
export function extensionBreach(extension: unknown): Breach | undefined {
  if (typeof extension !== 'object' || extension === null) return { rule: EXTENSION, value: extension };
  const { held, expiresAt } = extension as { held?: unknown; expiresAt?: unknown };
  if (held === false) return undefined;
  if (held !== true) return { rule: EXTENSION, value: extension };
  if (expiresAt !== null && !isValidDate(expiresAt)) {
    return { rule: 'resolve to stillHeld(expiresAt) with expiresAt a valid Date or null', value: expiresAt };
  }
  return undefined;
}

/** release, isHeld, forceRelease: a boolean, nothing else (`undefined` would read as "not held"). */
export function booleanBreach(answer: unknown): Breach | undefined {
  return typeof answer === 'boolean' ? undefined : { rule: 'resolve to a boolean', value: answer };
}

/** inspect: null when free, else a LockInfo. */
export function holderBreach(holder: unknown): Breach | undefined {
  if (holder === null) return undefined;
  const field = lockInfoFieldBreach(holder);
  return field && { rule: `resolve to null or a LockInfo ${field.rule}`, value: field.value };
}

/** list, slotHolders: an array of LockInfo. */
export function holdersBreach(holders: unknown): Breach | undefined {
  if (!Array.isArray(holders)) return { rule: 'resolve to an array of LockInfo', value: holders };
  for (let i = 0; i < holders.length; i++) {
    const field = lockInfoFieldBreach(holders[i]);
    if (field) return { rule: `resolve to an array of LockInfo ${field.rule} (item ${i})`, value: field.value };
  }
  return undefined;
}

/** The LockInfo fields callers rely on; `rule` completes "a LockInfo ...". */
function lockInfoFieldBreach(info: unknown): Breach | undefined {
  if (typeof info !== 'object' || info === null) return { rule: 'object', value: info };
  const { key, owner, reason, acquiredAt, expiresAt, token, details } = info as Record<string, unknown>;
  if (typeof key !== 'string') return { rule: 'whose key is a string', value: key };
  if (typeof owner !== 'string') return { rule: 'whose owner is a string', value: owner };
  if (reason !== undefined && typeof reason !== 'string') return { rule: 'whose reason is a string or undefined', value: reason };
  if (!isValidDate(acquiredAt)) return { rule: 'whose acquiredAt is a valid Date', value: acquiredAt };
  if (expiresAt !== null && !isValidDate(expiresAt)) return { rule: 'whose expiresAt is a valid Date or null', value: expiresAt };
  // 0n is allowed here: a holder that is not Holdfast's (a foreign Redis value) has no token.
  if (typeof token !== 'bigint' || token < 0n) return { rule: 'whose token is a bigint, 0n or more', value: token };
  if (details !== undefined && (typeof details !== 'object' || details === null)) {
    return { rule: 'whose details are an object or undefined', value: details };
  }
  return undefined;
}

/** The parts of a LockBackend core calls: wrong ones are reported when the provider is built, not at first use. */
export function backendBreach(candidate: unknown): { member: string; breach: Breach } | undefined {
  if (typeof candidate !== 'object' || candidate === null)
    return { member: 'createProvider', breach: { rule: 'get a LockBackend', value: candidate } };
  const backend = candidate as Record<string, unknown>;
  const { name, capabilities } = backend;
  if (typeof name !== 'string' || name === '') return { member: 'name', breach: { rule: 'be a non-empty string', value: name } };
  if (typeof capabilities !== 'object' || capabilities === null) {
    return { member: 'capabilities', breach: { rule: 'be a Capabilities object', value: capabilities } };
  }
  for (const member of REQUIRED_METHODS) {
    if (typeof backend[member] !== 'function') return { member, breach: { rule: 'be a method', value: backend[member] } };
  }
  for (const member of OPTIONAL_METHODS) {
    const method = backend[member];
    if (method !== undefined && typeof method !== 'function') {
      return { member, breach: { rule: 'be a method or absent', value: method } };
    }
  }
  if ((backend['tryGrantMode'] === undefined) !== (backend['modeHolders'] === undefined)) {
    return { member: 'tryGrantMode', breach: { rule: 'come with modeHolders (both or neither)', value: backend['tryGrantMode'] } };
  }
  // Semaphores need both: provider.semaphore() would otherwise say "unsupported" for a half-built pair.
  if ((backend['tryGrantSlot'] === undefined) !== (backend['slotHolders'] === undefined)) {
    return { member: 'tryGrantSlot', breach: { rule: 'come with slotHolders (both or neither)', value: backend['tryGrantSlot'] } };
  }
  return undefined;
}

const REQUIRED_METHODS = ['tryGrant', 'abandon', 'inspect', 'list', 'forceRelease', 'close'] as const;
const OPTIONAL_METHODS = ['waitForChange', 'leaveQueue', 'tryGrantSlot', 'slotHolders', 'tryGrantMode', 'modeHolders'] as const;

/** The rule an answer of one adapter method must keep, by the method's name in error messages. */
export interface AnswerCheck {
  readonly method: string;
  readonly breach: (answer: unknown) => Breach | undefined;
}

/** The checks of every answer core reads, built once. */
export const ANSWER_CHECKS = {
  tryGrant: { method: 'tryGrant', breach: outcomeBreach },
  tryGrantSlot: { method: 'tryGrantSlot', breach: outcomeBreach },
  tryGrantMode: { method: 'tryGrantMode', breach: outcomeBreach },
  extend: { method: 'grant.extend', breach: extensionBreach },
  release: { method: 'grant.release', breach: booleanBreach },
  isHeld: { method: 'grant.isHeld', breach: booleanBreach },
  inspect: { method: 'inspect', breach: holderBreach },
  list: { method: 'list', breach: holdersBreach },
  slotHolders: { method: 'slotHolders', breach: holdersBreach },
  modeHolders: { method: 'modeHolders', breach: holdersBreach },
  forceRelease: { method: 'forceRelease', breach: booleanBreach },
} as const satisfies Record<string, AnswerCheck>;

/** Call bounds that only check the answer, for calls bounded by the per-call timeout alone: built once, not per call. */
export const CHECK_ONLY = {
  extend: { check: ANSWER_CHECKS.extend },
  release: { check: ANSWER_CHECKS.release },
  isHeld: { check: ANSWER_CHECKS.isHeld },
} as const;

/** createProvider's check of the backend itself: a wrong one is reported when the provider is built, not at first use. */
export function checkBackend(backend: unknown): void {
  const broken = backendBreach(backend);
  if (broken) throw contractError(String((backend as { name?: unknown } | null)?.name), broken.member, broken.breach);
}

/** The error for a broken rule, naming the adapter, the method and the rule. */
export function contractError(backend: string, method: string, breach: Breach): AdapterContractError {
  return new AdapterContractError(backend, method, breach.rule, describe(breach.value));
}

function isValidDate(value: unknown): boolean {
  return value instanceof Date && !Number.isNaN(value.getTime());
}

/** A short text for the offending value: enough for an adapter author to recognise it, never a dump. */
export function describe(value: unknown): string {
  switch (typeof value) {
    case 'undefined':
      return 'undefined';
    case 'bigint':
      return `${value}n`;
    case 'string':
      return `${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)} (a string)`;
    case 'number':
    case 'boolean':
      return `${value} (a ${typeof value})`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
  }
  if (value === null) return 'null';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'an invalid Date' : `the Date ${value.toISOString()}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  const keys = Object.keys(value as object);
  const shown = keys.slice(0, 5).join(', ') + (keys.length > 5 ? ', ...' : '');
  const kind = (value as object).constructor?.name;
  return `${kind && kind !== 'Object' ? `a ${kind}` : 'an object'} { ${shown} }`;
}
