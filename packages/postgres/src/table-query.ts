import { BackendError } from '@holdfast/core';
import type { QueryResultRow } from 'pg';
import type { SchemaGuard } from './schema-guard.js';
import type { SqlRunner } from './sql-runner.js';
import type { TableNames } from './table-names.js';

const UNDEFINED_TABLE = '42P01';

/** Runs one statement somewhere and returns its rows. */
export type Executor<Row> = (text: string, values: readonly unknown[], signal: AbortSignal) => Promise<Row[]>;

/** Runs one statement on the lock tables: creates them first if asked, and names the fix when they are missing. */
export class TableQuery {
  constructor(
    private readonly runner: SqlRunner,
    private readonly names: TableNames,
    private readonly schema: SchemaGuard,
  ) {}

  /** On a pooled connection, or through `on` (session mode runs some statements on the holder's own connection). */
  async run<Row extends QueryResultRow>(
    text: string,
    values: readonly unknown[],
    signal: AbortSignal,
    on: Executor<Row> = (...args) => this.runner.query<Row>(...args),
  ): Promise<Row[]> {
    await this.schema.ensure(signal);
    try {
      return await on(text, values, signal);
    } catch (error) {
      if ((error as { code?: unknown }).code === UNDEFINED_TABLE) {
        throw new BackendError(
          'postgres',
          `table ${this.names.name} or ${this.names.name}_fences does not exist: apply the DDL in docs/semantics-postgres.md or leave createTables on`,
          error,
        );
      }
      throw error;
    }
  }
}
