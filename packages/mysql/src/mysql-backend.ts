import type { LockInfo } from '@holdfast/core';
import {
  type Busy,
  busy,
  type CallContext,
  type GrantOutcome,
  type GrantRequest,
  granted,
  type LockBackend,
  type WaitOptions,
} from '@holdfast/core/backend';
import { MYSQL_CAPABILITIES } from './capabilities.js';
import { type Holder, KeyWatch } from './key-watch.js';
import type { LockTable } from './lock-table.js';
import { MysqlGrant } from './mysql-grant.js';
import type { SqlRunner } from './sql-runner.js';

/** What a busy answer tells the wait that follows it: the holder it saw (token, lease left by the server's clock). */
export type MysqlWake = Holder;

/** Lease mode: a row per held key, a few autocommit statements per operation, polled wake-ups. */
export class MysqlBackend implements LockBackend<MysqlWake> {
  readonly name = 'mysql';
  readonly capabilities = MYSQL_CAPABILITIES;
  private readonly watch: KeyWatch;

  constructor(
    private readonly runner: SqlRunner,
    private readonly table: LockTable,
    pollIntervalMs: number,
  ) {
    this.watch = new KeyWatch((key, signal) => table.holder(key, signal), pollIntervalMs);
  }

  async tryGrant(request: GrantRequest, call: CallContext): Promise<GrantOutcome<MysqlWake>> {
    const answer = await this.table.grant(request, call.signal);
    if (!answer.granted) return busy(answer.holder ?? undefined);
    const { token, acquiredAt, expiresAt } = answer.lock;
    return granted(new MysqlGrant(this.table, request.key, request.lockId, token, acquiredAt, expiresAt!));
  }

  waitForChange(key: string, state: Busy<MysqlWake>, options: WaitOptions): Promise<void> {
    return this.watch.wait(key, state.wake, options);
  }

  async abandon(request: GrantRequest, call: CallContext): Promise<void> {
    await this.table.release(request.key, request.lockId, call.signal);
  }

  inspect(key: string, call: CallContext): Promise<LockInfo | null> {
    return this.table.inspect(key, call.signal);
  }

  list(prefix: string, call: CallContext): Promise<readonly LockInfo[]> {
    return this.table.list(prefix, call.signal);
  }

  forceRelease(key: string, call: CallContext): Promise<boolean> {
    return this.table.forceRelease(key, call.signal);
  }

  async close(call: CallContext): Promise<void> {
    this.watch.close();
    await this.runner.close(call.signal);
  }
}
