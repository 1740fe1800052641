import type { Layout } from './layout.js';
import type { EtcdRpc } from './rpc.js';
import type { Sessions } from './sessions.js';
import type { Watcher } from './watcher.js';

/** What every part of the protocol shares within one provider. */
export interface EtcdContext {
  readonly rpc: EtcdRpc;
  readonly layout: Layout;
  readonly sessions: Sessions;
  readonly watcher: Watcher;
  /** A signal for work no caller waits for (clean-ups, re-watches): the per-call bound, and close(). */
  readonly background: () => AbortSignal;
  /** Aborted once close() begins: background retries stop. */
  readonly closing: AbortSignal;
  /** The entry of each waiting acquire's place, as its last busy answer saw it (see places.ts). */
  readonly places: Map<string, PlaceEntry>;
}

export interface PlaceEntry {
  readonly key: Buffer;
  readonly createRevision: string;
}

/** A busy answer's hint for the wait that follows it. */
export interface EtcdWake {
  /** The revision the attempt saw: a watch from the next one misses nothing that happened after. */
  readonly revision: string;
  /** A queued lock contender's predecessor: the only entry it watches (no herd). */
  readonly predecessor?: Buffer;
  /** No entry is before this place any more: try again at once. */
  readonly retryNow?: boolean;
  /** A waiting acquire's own entry (its place), deleted at once when the wait is given up. */
  readonly entry?: PlaceEntry;
}
