import type { ClientDuplexStream } from '@grpc/grpc-js';
import type { EtcdRpc } from './rpc.js';

export interface WatchTarget {
  readonly key: Buffer;
  /** Watch the range [key, rangeEnd) instead of one key. */
  readonly rangeEnd?: Buffer;
  /** Replay from this revision ("0": from now), so nothing between a read and the watch is missed. */
  readonly startRevision: string;
  /** Only DELETE events (a waiter's predecessor, a holder's own entry). */
  readonly deletesOnly?: boolean;
}

export interface WatchHandlers {
  /** etcd created the watch: every event from its start revision on will arrive. */
  onCreated?(): void;
  /** Events arrived (at least one). */
  onEvent(): void;
  /** The watch ended without an event: stream broken, compacted, cancelled by etcd. */
  onBroken(reason: string): void;
}

interface WatchResponse {
  readonly watch_id: string;
  readonly created: boolean;
  readonly canceled: boolean;
  readonly compact_revision: string;
  readonly cancel_reason: string;
  readonly events: unknown[];
}

/**
 * Every watch of the provider on one Watch stream, as etcd's own client multiplexes them. Watch ids
 * are chosen here (etcd >= 3.4 takes them in the create request), so creates need not wait for one
 * another's answers. A broken stream ends every watch on it with onBroken; the next watch opens a
 * new stream.
 */
export class Watcher {
  private stream: ClientDuplexStream<unknown, unknown> | undefined;
  private readonly watches = new Map<string, WatchHandlers>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly rpc: EtcdRpc) {}

  /** Starts a watch; the function returned cancels it (its handlers are never called after). */
  watch(target: WatchTarget, handlers: WatchHandlers): () => void {
    if (this.closed) {
      queueMicrotask(() => handlers.onBroken('the provider closed'));
      return () => undefined;
    }
    const id = String(this.nextId++);
    this.watches.set(id, handlers);
    const stream = this.open();
    stream.write({
      create_request: {
        key: target.key,
        range_end: target.rangeEnd ?? Buffer.alloc(0),
        start_revision: target.startRevision,
        filters: target.deletesOnly ? ['NOPUT'] : [],
        watch_id: id,
      },
    });
    return () => {
      if (this.watches.delete(id) && this.stream === stream) stream.write({ cancel_request: { watch_id: id } });
    };
  }

  close(): void {
    this.closed = true;
    this.breakAll(this.stream, 'the provider closed');
  }

  private open(): ClientDuplexStream<unknown, unknown> {
    if (this.stream) return this.stream;
    const stream = this.rpc.stream(this.rpc.watch, 'Watch');
    this.stream = stream;
    stream.on('data', (res: WatchResponse) => {
      const handlers = this.watches.get(res.watch_id);
      if (!handlers) return;
      if (res.created) handlers.onCreated?.();
      if (res.events.length > 0) handlers.onEvent();
      if (res.canceled) {
        this.watches.delete(res.watch_id);
        const compacted = res.compact_revision !== '0' ? `compacted at revision ${res.compact_revision}` : '';
        handlers.onBroken(res.cancel_reason || compacted || 'cancelled by etcd');
      }
    });
    const broken = (error?: Error): void => this.breakAll(stream, error?.message ?? 'the watch stream ended');
    stream.on('error', broken);
    stream.on('end', () => broken());
    return stream;
  }

  private breakAll(stream: ClientDuplexStream<unknown, unknown> | undefined, reason: string): void {
    if (!stream || this.stream !== stream) return;
    this.stream = undefined;
    stream.cancel();
    const handlers = [...this.watches.values()];
    this.watches.clear();
    for (const h of handlers) h.onBroken(reason);
  }
}
