import { untilAborted } from '@holdfast/core/backend';
import { createTableStatements } from './schema.js';
import type { SqlRunner } from './sql-runner.js';
import type { TableNames } from './table-names.js';

/**
 * Creates the tables on a provider's first statement (so creating a provider never waits for the
 * server), once; a failed attempt is forgotten so that the next call tries again. Concurrent
 * CREATE TABLE IF NOT EXISTS from several processes is safe on MySQL and MariaDB (metadata locks).
 */
export class SchemaGuard {
  private done: Promise<void> | undefined;
  private created = false;

  constructor(
    private readonly runner: SqlRunner,
    private readonly names: TableNames,
    private readonly enabled: boolean,
  ) {}

  ensure(signal: AbortSignal): Promise<void> {
    if (!this.enabled || this.created) return Promise.resolve();
    this.done ??= this.create(signal);
    // The first caller's signal bounds the creation; the others wait for it under their own.
    return untilAborted(this.done, signal);
  }

  private async create(signal: AbortSignal): Promise<void> {
    try {
      await this.runner.withConnection(signal, async (run) => {
        for (const ddl of createTableStatements(this.names)) await run(ddl, []);
      });
      this.created = true;
    } catch (error) {
      this.done = undefined;
      throw error;
    }
  }
}
