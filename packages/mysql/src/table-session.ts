import { BackendError } from '@holdfast/core';
import type { SchemaGuard } from './schema-guard.js';
import type { Run, SqlRunner } from './sql-runner.js';
import type { TableNames } from './table-names.js';

const NO_SUCH_TABLE = 1146;
const NO_SUCH_COLUMN = 1054;

/** One operation's statements on the lock tables: created first if need be, on one borrowed connection. */
export class TableSession {
  constructor(
    private readonly runner: SqlRunner,
    private readonly names: TableNames,
    private readonly schema: SchemaGuard,
  ) {}

  async run<T>(signal: AbortSignal, work: (run: Run) => Promise<T>): Promise<T> {
    await this.schema.ensure(signal);
    try {
      return await this.runner.withConnection(signal, work);
    } catch (error) {
      const errno = (error as { errno?: unknown }).errno;
      if (errno === NO_SUCH_TABLE || errno === NO_SUCH_COLUMN) {
        throw new BackendError(
          'mysql',
          `table ${this.names.name} or ${this.names.name}_fences does not exist, or lacks a column (slot_limit and slots came with semaphores): apply the DDL in docs/semantics-mysql.md or leave createTables on`,
          error,
        );
      }
      throw error;
    }
  }
}
