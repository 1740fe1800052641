import { randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** A provider instance's identity: `<host>:<pid>:<random>`, readable in inspect() output. */
export function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export function newLockId(): string {
  return randomUUID();
}
