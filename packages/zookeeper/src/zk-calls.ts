import { BackendError } from '@holdfast/core';
import { untilAborted } from '@holdfast/core/backend';
import zookeeper, { type Client, type Event, type Stat } from 'node-zookeeper-client';

export const { CreateMode, Exception } = zookeeper;

/** ZooKeeper's error code of a failed call (NO_NODE, NODE_EXISTS, BAD_VERSION, CONNECTION_LOSS...), or undefined. */
export function zkCode(error: unknown): number | undefined {
  const code = (error as { getCode?: () => number } | null)?.getCode?.();
  return typeof code === 'number' ? code : undefined;
}

export const isNoNode = (error: unknown): boolean => zkCode(error) === Exception.NO_NODE;

/** Any failure of a call becomes a BackendError (retried by core), with ZooKeeper's error as the cause. */
function failed(operation: string, path: string, error: unknown): BackendError {
  const message = error instanceof Error ? error.message : String(error);
  return new BackendError('zookeeper', `${operation} ${path}: ${message}`, error);
}

/**
 * One call, bounded by `signal`: the client cannot cancel a request, so a late answer is ignored
 * (whatever it created is found again by the name it carries and freed by abandon()).
 */
function call<T>(
  ready: Promise<void> | undefined,
  operation: string,
  path: string,
  signal: AbortSignal,
  start: (done: (error: unknown, value?: T) => void) => void,
): Promise<T> {
  const send = (): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      start((error, value) => (error ? reject(error) : resolve(value as T)));
    });
  // Sent at once while connected; otherwise once connected, or failed when no server answers in time.
  const work = ready ? ready.then(send) : send();
  return untilAborted(work, signal, (reason) => failed(operation, path, reason)).catch((error: unknown) => {
    throw error instanceof BackendError ? error : failed(operation, path, error);
  });
}

/** The calls the adapter makes, each bounded by a signal; a missing node is null or false, not an error. */
export class ZkCalls {
  constructor(
    private readonly client: () => Client,
    /** Undefined while connected, else a wait for the connection that fails in bounded time. */
    private readonly ready: (signal: AbortSignal) => Promise<void> | undefined,
  ) {}

  create(path: string, data: Buffer, mode: number, signal: AbortSignal): Promise<string> {
    return call(this.ready(signal), 'create', path, signal, (done) => this.client().create(path, data, mode, done));
  }

  /** Creates the parents of `path` that are missing (persistent), like `mkdir -p`. */
  mkdirp(path: string, signal: AbortSignal): Promise<string> {
    return call(this.ready(signal), 'mkdirp', path, signal, (done) => this.client().mkdirp(path, done));
  }

  /** The children's names, or null when the node does not exist. */
  async children(path: string, signal: AbortSignal, watcher?: (event: Event) => void): Promise<string[] | null> {
    try {
      return await call<string[]>(this.ready(signal), 'getChildren', path, signal, (done) =>
        watcher ? this.client().getChildren(path, watcher, done) : this.client().getChildren(path, done),
      );
    } catch (error) {
      if (isNoNode((error as BackendError).cause)) return null;
      throw error;
    }
  }

  /** Data and stat, or null when the node does not exist. */
  async data(path: string, signal: AbortSignal): Promise<{ data: Buffer | undefined; stat: Stat } | null> {
    try {
      return await call(this.ready(signal), 'getData', path, signal, (done) =>
        this.client().getData(path, (error, data, stat) => done(error, { data, stat: stat as Stat })),
      );
    } catch (error) {
      if (isNoNode((error as BackendError).cause)) return null;
      throw error;
    }
  }

  /** The node's stat, or null; with a watcher, it fires once when the node is created, changed or deleted. */
  exists(path: string, signal: AbortSignal, watcher?: (event: Event) => void): Promise<Stat | null> {
    return call<Stat | null>(this.ready(signal), 'exists', path, signal, (done) =>
      watcher
        ? this.client().exists(path, watcher, (error, stat) => done(error, stat ?? null))
        : this.client().exists(path, (error, stat) => done(error, stat ?? null)),
    );
  }

  /** Sets the data if the version matches (-1: any); the new stat, or null when the node or the version is gone. */
  async setData(path: string, data: Buffer, version: number, signal: AbortSignal): Promise<Stat | null> {
    try {
      return await call<Stat>(this.ready(signal), 'setData', path, signal, (done) => this.client().setData(path, data, version, done));
    } catch (error) {
      const code = zkCode((error as BackendError).cause);
      if (code === Exception.NO_NODE || code === Exception.BAD_VERSION) return null;
      throw error;
    }
  }

  /** Deletes the node if the version matches (-1: any); false when it was gone or changed. */
  async remove(path: string, version: number, signal: AbortSignal): Promise<boolean> {
    try {
      await call<void>(this.ready(signal), 'remove', path, signal, (done) => this.client().remove(path, version, done));
      return true;
    } catch (error) {
      const code = zkCode((error as BackendError).cause);
      if (code === Exception.NO_NODE || code === Exception.BAD_VERSION) return false;
      throw error;
    }
  }
}

/** czxid: the zxid of the transaction that created the node, strictly increasing across the ensemble. */
export function czxidOf(stat: Stat): bigint {
  return (stat.czxid as unknown as Buffer).readBigUInt64BE(0);
}

/** The node's creation time (the leader's clock when it was created). */
export function ctimeOf(stat: Stat): Date {
  return new Date(Number((stat.ctime as unknown as Buffer).readBigUInt64BE(0)));
}
