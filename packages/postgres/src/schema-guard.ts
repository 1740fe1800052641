import { untilAborted } from '@holdfast/core/backend';
import { createTablesStatement } from './schema.js';
import type { SqlRunner } from './sql-runner.js';
import type { TableNames } from './table-names.js';

/**
 * Creates the tables once per provider, on its first statement (so creating a provider never waits
 * for the server). A failed attempt is forgotten, so the next call tries again.
 */
export class SchemaGuard {
  private created: Promise<void> | null = null;

  constructor(
    private readonly runner: SqlRunner,
    private readonly names: TableNames,
    private readonly enabled: boolean,
  ) {}

  ensure(signal: AbortSignal): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    if (!this.created) {
      // Bounded by the first caller's signal; later callers wait for it under their own.
      const attempt = this.runner.query(createTablesStatement(this.names), [], signal).then(() => undefined);
      this.created = attempt;
      attempt.catch(() => {
        if (this.created === attempt) this.created = null;
      });
    }
    return untilAborted(this.created, signal);
  }
}
