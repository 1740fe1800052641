import { LockConflictError, type LockInfo } from '@holdfast/core';
import type { ModeRequest } from '@holdfast/core/backend';
import type { ModeStatements } from './mode-statements.js';
import { type GrantAnswer, type GrantRow, grantAnswer, inUseAs, type ModeHolderRow, modeHolderInfo } from './rows.js';
import type { TableQuery } from './table-query.js';

/** The read-write lock statements on one table (see mode-statements.ts); its grants are extended and freed as slots. */
export class ModeTable {
  constructor(
    private readonly query: TableQuery,
    private readonly sql: ModeStatements,
  ) {}

  /** A shared or exclusive grant, or busy; LockConflictError when the key is a plain lock or a semaphore. */
  async grant(request: ModeRequest, signal: AbortSignal): Promise<GrantAnswer> {
    const [row] = await this.query.run<GrantRow>(
      this.sql.grant,
      [request.key, request.lockId, request.owner, request.reason ?? null, request.ttlMs, request.mode],
      signal,
    );
    const answer = grantAnswer(row);
    if (answer.granted || answer.inUseLimit === null || answer.inUseLimit < 0) return answer;
    throw new LockConflictError(request.key, `it is in use as ${inUseAs(answer.inUseLimit)}, not as a read-write lock`);
  }

  async holders(key: string, signal: AbortSignal): Promise<LockInfo[]> {
    return (await this.query.run<ModeHolderRow>(this.sql.holders, [key], signal)).map(modeHolderInfo);
  }
}
