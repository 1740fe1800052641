// redlock 5.0.0-beta.2 ships types, but its package.json "exports" has no "types" condition, so
// NodeNext resolution cannot find them. The part of its API these tests use:
declare module 'redlock' {
  import type { Redis } from 'ioredis';

  export class ExecutionError extends Error {}
  export class ResourceLockedError extends Error {}

  export interface Settings {
    readonly driftFactor?: number;
    readonly retryCount?: number;
    readonly retryDelay?: number;
    readonly retryJitter?: number;
  }

  export class Lock {
    readonly resources: string[];
    readonly value: string;
    readonly expiration: number;
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: Settings);
    acquire(resources: string[], duration: number, settings?: Settings): Promise<Lock>;
    release(lock: Lock, settings?: Settings): Promise<unknown>;
    extend(lock: Lock, duration: number, settings?: Settings): Promise<Lock>;
    quit(): Promise<void>;
  }
}
