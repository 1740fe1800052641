// table-backend.ts: a complete adapter on contract v3, over a tiny lock table standing for a server.
// docs/writing-an-adapter.md explains it; test-harness/test/outside-adapter.test.ts runs the
// conformance suite on it, as an adapter author outside this repository would.
import type { Capabilities, LockInfo } from '@holdfast/core';
import {
  type BackendGrant,
  type Busy,
  busy,
  type CallContext,
  createProvider,
  type Extension,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  NOT_HELD,
  type QueuePlace,
  stillHeld,
  WaitList,
  type WaitOptions,
} from '@holdfast/core/backend';

/** One row of the table: who holds the key, until when, with which fencing token. */
interface Row {
  readonly lockId: string;
  readonly owner: string;
  readonly reason: string | undefined;
  readonly token: bigint;
  readonly acquiredAt: Date;
  expiresAt: number;
  readonly onLost: (detail: string) => void;
}

/**
 * The "server": rows, a token counter per key that is never reset, a FIFO line of waiting places
 * per key and a release notification. A real backend offers the same as atomic operations (a
 * script, a transaction, a compare-and-set); every method here is one such operation.
 */
export class LockTable {
  readonly rows = new Map<string, Row>();
  readonly tokens = new Map<string, bigint>();
  readonly lines = new Map<string, QueuePlace[]>();
  readonly freed = new WaitList<string>();

  /** The live row of `key`; a row past its expiry is gone (the server's clock judges expiry). */
  live(key: string): Row | undefined {
    const row = this.rows.get(key);
    if (row && row.expiresAt <= Date.now()) this.rows.delete(key);
    return this.rows.get(key);
  }

  /** The key's line without places whose caller stopped waiting (a crashed waiter must not block the line). */
  line(key: string): QueuePlace[] {
    const line = (this.lines.get(key) ?? []).filter((place) => place.until > Date.now());
    if (line.length > 0) this.lines.set(key, line);
    else this.lines.delete(key);
    return line;
  }

  join(key: string, place: QueuePlace): void {
    const line = this.line(key);
    if (!line.some((waiting) => waiting.id === place.id)) this.lines.set(key, [...line, place]);
  }

  leave(key: string, placeId: string): void {
    this.lines.set(
      key,
      this.line(key).filter((place) => place.id !== placeId),
    );
    this.line(key);
    this.freed.wakeAll(key, undefined);
  }

  /** Deletes the row if `lockId` holds it, and tells the waiters. */
  deleteIfOwner(key: string, lockId: string): boolean {
    if (this.live(key)?.lockId !== lockId) return false;
    this.rows.delete(key);
    this.freed.wakeAll(key, undefined);
    return true;
  }
}

const CAPABILITIES: Capabilities = {
  minTtlMs: 10,
  maxTtlMs: 3_600_000,
  defaultTtlMs: 30_000,
  fencing: 'strict',
  fifo: true,
  wakeUp: 'event',
  crossProcess: false,
  expiryGraceMs: 0,
  renewal: 'per-lock',
  noSemaphores: 'the example adapter implements no tryGrantSlot',
};

/** What a busy answer tells the wait: how long the holder's lease may still run (undefined: free, another place is first). */
interface Hint {
  readonly freeInMs: number | undefined;
}

/** One grant: it carries what proves ownership (the lockId) and checks it on every operation. */
class TableGrant implements BackendGrant {
  readonly token: bigint;
  readonly acquiredAt: Date;
  readonly expiresAt: Date;

  constructor(
    private readonly table: LockTable,
    private readonly key: string,
    private readonly row: Row,
  ) {
    this.token = row.token;
    this.acquiredAt = row.acquiredAt;
    this.expiresAt = new Date(row.expiresAt);
  }

  async extend(ttlMs: number, _call: CallContext): Promise<Extension> {
    const row = this.table.live(this.key);
    if (row?.lockId !== this.row.lockId) return NOT_HELD;
    row.expiresAt = Date.now() + ttlMs;
    return stillHeld(new Date(row.expiresAt));
  }

  async release(_call: CallContext): Promise<boolean> {
    return this.table.deleteIfOwner(this.key, this.row.lockId);
  }

  async isHeld(_call: CallContext): Promise<boolean> {
    return this.table.live(this.key)?.lockId === this.row.lockId;
  }
}

/** The adapter: each method is one atomic operation of the table; core does everything else. */
export class TableBackend implements LockBackend<Hint> {
  readonly name = 'table';
  readonly capabilities = CAPABILITIES;

  constructor(private readonly table: LockTable) {}

  async tryGrant(request: GrantRequest, _call: CallContext): Promise<GrantOutcome<Hint>> {
    const { key, place } = request;
    const holder = this.table.live(key);
    const first = this.table.line(key)[0];
    if (holder || (first && first.id !== place?.id)) {
      if (place) this.table.join(key, place);
      return busy({ freeInMs: holder ? holder.expiresAt - Date.now() : undefined });
    }
    const token = (this.table.tokens.get(key) ?? 0n) + 1n;
    this.table.tokens.set(key, token);
    const { lockId, owner, reason, ttlMs, onLost } = request;
    const row: Row = { lockId, owner, reason, token, acquiredAt: new Date(), expiresAt: Date.now() + ttlMs, onLost };
    this.table.rows.set(key, row);
    if (place) this.table.leave(key, place.id);
    return granted(new TableGrant(this.table, key, row));
  }

  /** Until the key is freed, the holder's lease runs out, or the wait's bounds; at once when the place's turn has come. */
  async waitForChange(key: string, last: Busy<Hint>, options: WaitOptions): Promise<void> {
    const first = this.table.line(key)[0];
    if (!this.table.live(key) && (!first || first.id === options.place?.id)) return;
    // An expiry sends no notification: wake up when the holder's lease runs out.
    const timeoutMs = Math.min(options.timeoutMs, last.wake?.freeInMs ?? options.timeoutMs);
    await this.table.freed.wait(key, { signal: options.signal, timeoutMs });
  }

  async leaveQueue(key: string, place: QueuePlace, _call: CallContext): Promise<void> {
    this.table.leave(key, place.id);
  }

  async abandon(request: GrantRequest, _call: CallContext): Promise<void> {
    this.table.deleteIfOwner(request.key, request.lockId);
  }

  async inspect(key: string, _call: CallContext): Promise<LockInfo | null> {
    const row = this.table.live(key);
    return row ? infoOf(key, row) : null;
  }

  async list(prefix: string, _call: CallContext): Promise<readonly LockInfo[]> {
    const keys = [...this.table.rows.keys()].filter((key) => key.startsWith(prefix)).sort();
    return keys.flatMap((key) => {
      const row = this.table.live(key);
      return row ? [infoOf(key, row)] : [];
    });
  }

  async forceRelease(key: string, _call: CallContext): Promise<boolean> {
    const row = this.table.live(key);
    if (!row || !this.table.deleteIfOwner(key, row.lockId)) return false;
    row.onLost('force-released by an administrator');
    return true;
  }

  async close(_call: CallContext): Promise<void> {}
}

function infoOf(key: string, row: Row): LockInfo {
  const { owner, reason, acquiredAt, token } = row;
  return { key, owner, reason, acquiredAt, expiresAt: new Date(row.expiresAt), token };
}

/** Providers on one table stand for processes sharing one server. */
export function createTableProvider(table: LockTable) {
  return createProvider(new TableBackend(table));
}
