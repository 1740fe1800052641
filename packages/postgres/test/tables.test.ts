// The tables: created on first use (also by several providers at once), or by the app from the
// documented DDL; a table of one's own name; tokens that keep rising after lock rows are gone.
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, rejection } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { createPostgresProvider, createTablesSql, tableNames } from '../src/index.js';

const postgres = await useBackend('postgres');
const run = `${process.pid}_${Date.now()}`;

describe.skipIf(!postgres.url)(`postgres tables (${postgres.label})`, { timeout: 30_000 }, () => {
  const url = postgres.url!;
  const admin = new pg.Client({ connectionString: url });
  const providers: LockProvider[] = [];
  const open = (table: string, createTables = true): LockProvider => {
    const provider = createPostgresProvider({ url, table, createTables });
    providers.push(provider);
    return provider;
  };
  afterAll(async () => {
    await Promise.allSettled(providers.map((provider) => provider.close()));
    await admin.end();
  });

  test('createTables: false issues no DDL: a missing table is a BackendError naming the fix; the documented DDL makes it work', async () => {
    await admin.connect();
    const name = `manual_${run}`;
    const provider = open(name, false);
    const error = await rejection(provider.tryAcquire('k'));
    expect(codeOf(error)).toBe(ErrorCode.Backend);
    expect(String((error as Error).message)).toMatch(/does not exist.*DDL/);
    await admin.query(createTablesSql(tableNames(name)));
    const lock = await provider.tryAcquire('k');
    expect(lock!.token).toBe(1n);
    await lock!.release();
  });

  test('five providers creating the same schema-qualified tables at once all succeed, and exclude each other', async () => {
    const schema = `s_${run}`;
    await admin.query(`CREATE SCHEMA "${schema}"`);
    const five = Array.from({ length: 5 }, () => open(`${schema}.locks`));
    const locks = await Promise.all(five.map((provider) => provider.tryAcquire('shared')));
    expect(locks.filter((lock) => lock !== null)).toHaveLength(1);
    const { rows } = await admin.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema]);
    expect(rows.map((row) => row.table_name)).toEqual(['locks', 'locks_fences']);
    await locks.find((lock) => lock !== null)!.release();
  });

  test('tokens keep rising after the lock rows are gone: released, force-released, deleted by hand', async () => {
    const name = `tokens_${run}`;
    const provider = open(name);
    const tokens: bigint[] = [];
    const take = async (): Promise<void> => {
      const lock = await provider.tryAcquire('k');
      tokens.push(lock!.token);
    };
    await take();
    await provider.forceRelease('k');
    await take();
    await admin.query(`DELETE FROM "${name}"`);
    await take();
    await admin.query(`UPDATE "${name}" SET expires_at = now() - interval '1 second'`);
    await take();
    expect(tokens).toEqual([1n, 2n, 3n, 4n]);
  });
});
