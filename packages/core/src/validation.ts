import { InvalidArgumentError } from './errors.js';
import type { AcquireOptions, Capabilities } from './types.js';

/** Longest key, in UTF-8 bytes. Fits every backend's key/_id limits with room for prefixes. */
export const MAX_KEY_BYTES = 256;
export const MAX_REASON_LENGTH = 1024;
/** The most holders a semaphore may allow; a bound every backend can store and scan. */
export const MAX_SEMAPHORE_LIMIT = 10_000;

// Control characters (C0, DEL and C1, which includes U+0085 NEXT LINE) would corrupt log lines and
// HTTP paths; no backend needs them.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;
/** An empty, "." or ".." segment anywhere in a key; the loop in validateKey() then says which. */
const BAD_SEGMENT = /(?:^|\/)\.{0,2}(?:\/|$)/;
/** A UTF-16 code unit is at most 3 UTF-8 bytes (a surrogate pair, two units, is 4): shorter keys need no count. */
const SURELY_SHORT_ENOUGH = Math.floor(MAX_KEY_BYTES / 3);

/**
 * Key rules, the same on every backend: a non-empty string of at most 256 UTF-8 bytes; no control
 * characters; case-sensitive; "/" separates segments (Consul paths), so no leading or trailing "/",
 * no empty segment and no "." or ".." segment, which HTTP path handling would otherwise alias.
 */
export function validateKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') throw new InvalidArgumentError('key', `expected a string, got ${describe(key)}`);
  if (key.length === 0) throw new InvalidArgumentError('key', 'must not be empty');
  if (key.length > SURELY_SHORT_ENOUGH && Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
    throw new InvalidArgumentError('key', `longer than ${MAX_KEY_BYTES} UTF-8 bytes`);
  }
  if (CONTROL_CHARACTERS.test(key)) throw new InvalidArgumentError('key', 'contains a control character');
  if (!key.isWellFormed()) throw new InvalidArgumentError('key', 'contains a lone surrogate');
  if (!BAD_SEGMENT.test(key)) return;
  for (const segment of key.split('/')) {
    if (segment === '') throw new InvalidArgumentError('key', `"${key}" has an empty "/" segment`);
    if (segment === '.' || segment === '..') throw new InvalidArgumentError('key', `"${key}" has a "${segment}" segment`);
  }
}

export function validateLimit(limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEMAPHORE_LIMIT) {
    throw new InvalidArgumentError('limit', `expected a whole number from 1 to ${MAX_SEMAPHORE_LIMIT}, got ${describe(limit)}`);
  }
  return limit;
}

/** A listing prefix: '' (everything) or any string a key could start with. */
export function validateListOptions(options: unknown): string {
  if (options === undefined) return '';
  if (options === null || typeof options !== 'object')
    throw new InvalidArgumentError('options', `expected an object, got ${describe(options)}`);
  for (const name of Object.keys(options)) {
    if (name !== 'prefix') throw new InvalidArgumentError(name, 'not a list() option; expected prefix');
  }
  const prefix = (options as { prefix?: unknown }).prefix;
  if (prefix === undefined || prefix === '') return '';
  if (typeof prefix !== 'string') throw new InvalidArgumentError('prefix', `expected a string, got ${describe(prefix)}`);
  if (Buffer.byteLength(prefix, 'utf8') > MAX_KEY_BYTES)
    throw new InvalidArgumentError('prefix', `longer than ${MAX_KEY_BYTES} UTF-8 bytes`);
  if (CONTROL_CHARACTERS.test(prefix)) throw new InvalidArgumentError('prefix', 'contains a control character');
  if (!prefix.isWellFormed()) throw new InvalidArgumentError('prefix', 'contains a lone surrogate');
  return prefix;
}

export function validateTtl(ttlMs: unknown, capabilities: Capabilities, name = 'ttlMs'): number {
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs)) {
    throw new InvalidArgumentError(name, `expected a finite number of ms, got ${describe(ttlMs)}`);
  }
  if (!Number.isInteger(ttlMs)) throw new InvalidArgumentError(name, `expected whole milliseconds, got ${ttlMs}`);
  if (ttlMs <= 0) throw new InvalidArgumentError(name, `must be positive, got ${ttlMs}`);
  if (ttlMs < capabilities.minTtlMs) {
    throw new InvalidArgumentError(name, `${ttlMs} ms is below this backend's minimum of ${capabilities.minTtlMs} ms`);
  }
  if (ttlMs > capabilities.maxTtlMs) {
    throw new InvalidArgumentError(name, `${ttlMs} ms is above this backend's maximum of ${capabilities.maxTtlMs} ms`);
  }
  return ttlMs;
}

/**
 * What a TTL below the backend's minimum does. 'raise' (the default) lifts it to the minimum, so
 * the same code runs on every backend: a longer lease only delays recovery from a crashed holder,
 * it never weakens exclusion, and `lock.expiresAt` shows the real lease. 'reject' throws instead.
 */
export type TtlPolicy = 'raise' | 'reject';

/** A valid TTL under the policy; above the maximum is always an error (a shorter lease than asked is unsafe). */
export function effectiveTtl(ttlMs: unknown, capabilities: Capabilities, policy: TtlPolicy, name = 'ttlMs'): number {
  if (policy === 'raise' && typeof ttlMs === 'number' && Number.isInteger(ttlMs) && ttlMs > 0 && ttlMs < capabilities.minTtlMs) {
    return capabilities.minTtlMs;
  }
  return validateTtl(ttlMs, capabilities, name);
}

export function validateWait(waitMs: unknown): number {
  if (waitMs === undefined || waitMs === Infinity) return Infinity;
  if (typeof waitMs !== 'number' || Number.isNaN(waitMs)) {
    throw new InvalidArgumentError('waitMs', `expected a number of ms, got ${describe(waitMs)}`);
  }
  if (waitMs < 0) throw new InvalidArgumentError('waitMs', `must not be negative, got ${waitMs}`);
  return waitMs;
}

export interface ValidatedAcquire {
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly reason: string | undefined;
  readonly autoRenew: boolean;
  readonly waitForBackend: boolean;
  readonly signal: AbortSignal | undefined;
}

export function validateAcquireOptions(options: unknown, capabilities: Capabilities, ttlPolicy: TtlPolicy = 'reject'): ValidatedAcquire {
  if (options === undefined || options === null) options = {};
  if (typeof options !== 'object') throw new InvalidArgumentError('options', `expected an object, got ${describe(options)}`);
  const o = options as AcquireOptions;
  const ttlMs = o.ttlMs === undefined ? capabilities.defaultTtlMs : effectiveTtl(o.ttlMs, capabilities, ttlPolicy);
  const waitMs = validateWait(o.waitMs);
  if (o.reason !== undefined && typeof o.reason !== 'string') {
    throw new InvalidArgumentError('reason', `expected a string, got ${describe(o.reason)}`);
  }
  if (o.reason !== undefined && o.reason.length > MAX_REASON_LENGTH) {
    throw new InvalidArgumentError('reason', `longer than ${MAX_REASON_LENGTH} characters`);
  }
  if (o.autoRenew !== undefined && typeof o.autoRenew !== 'boolean') {
    throw new InvalidArgumentError('autoRenew', `expected a boolean, got ${describe(o.autoRenew)}`);
  }
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) {
    throw new InvalidArgumentError('signal', 'expected an AbortSignal');
  }
  if (o.waitForBackend !== undefined && typeof o.waitForBackend !== 'boolean') {
    throw new InvalidArgumentError('waitForBackend', `expected a boolean, got ${describe(o.waitForBackend)}`);
  }
  return { ttlMs, waitMs, reason: o.reason, autoRenew: o.autoRenew ?? true, waitForBackend: o.waitForBackend ?? false, signal: o.signal };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return `"${value}"`;
  return typeof value;
}
