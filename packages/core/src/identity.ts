import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** A provider instance's identity: `<host>:<pid>:<random>`, readable in inspect() output. */
export function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

let lockIdPrefix: string | undefined;
let lockIdCount = 0;

/**
 * Unique per attempt, across processes: 128 random bits drawn once per module instance (each
 * process and worker thread has its own), then a counter. A UUID per attempt cost a twentieth of a
 * memory grant; the prefix is drawn on first use, not at load, so that a startup snapshot cannot
 * bake one prefix into every process started from it. ASCII, at most 33 characters (no "/" or ".").
 */
export function newLockId(): string {
  lockIdPrefix ??= randomBytes(16).toString('base64url');
  return lockIdPrefix + (++lockIdCount).toString(36);
}
