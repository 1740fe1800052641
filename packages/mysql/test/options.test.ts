import { readFileSync } from 'node:fs';
import { createLockProvider, ErrorCode } from '@holdfast/core';
import mysql from 'mysql2';
import { describe, expect, test } from 'vitest';
import { createMysqlProvider, createTablesSql, parseMysqlUrl, tableNames } from '../src/index.js';

const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
// A closed loopback port: nothing here may connect anyway, every case fails before any I/O.
const URL_ = 'mysql://u@127.0.0.1:1/db';

describe('mysql URLs', () => {
  test("Holdfast's parameters are taken out; mysql2's pass through in its uri", () => {
    const parsed = parseMysqlUrl(
      'mysql://u:p%40ss@db.local:3307/app?charset=utf8mb4&table=app.locks&createTables=false&pollInterval=100ms&connectTimeout=2s',
    );
    expect(parsed).toEqual({
      uri: 'mysql://u:p%40ss@db.local:3307/app?charset=utf8mb4',
      table: 'app.locks',
      createTables: false,
      pollIntervalMs: 100,
      connectTimeoutMs: 2000,
    });
    expect(parseMysqlUrl(new URL('mysql://h/db'))).toEqual({ uri: 'mysql://h/db' });
  });

  test('bad URLs are InvalidArgument errors, and the message never shows the password', () => {
    for (const url of [
      'postgres://h/db',
      'mysql://h/db?tabel=x',
      'mysql://h/db?createTables=maybe',
      'mysql://h/db?pollInterval=soon',
      'mysql://h/db?rowsAsArray=true',
      'not a url',
    ]) {
      expect(() => parseMysqlUrl(url), url).toThrow(invalid);
    }
    expect(() => parseMysqlUrl('mysql://u:hunter2@h/db?nope=1')).not.toThrow(/hunter2/);
  });
});

describe('table names', () => {
  test('name or database.name, quoted with backticks; fences follow the name', () => {
    expect(tableNames()).toEqual({ name: 'holdfast_locks', locks: '`holdfast_locks`', fences: '`holdfast_locks_fences`' });
    expect(tableNames('app.locks')).toMatchObject({ locks: '`app`.`locks`', fences: '`app`.`locks_fences`' });
  });

  test('anything that is not a plain lower-case identifier is refused before any SQL is built', () => {
    for (const name of [
      '',
      'Locks',
      'a.b.c',
      'locks; drop table x',
      'lo`cks',
      '1locks',
      'a-b',
      'x'.repeat(58),
      `${'d'.repeat(65)}.locks`,
      42,
    ]) {
      expect(() => tableNames(name), String(name)).toThrow(invalid);
    }
    expect(() => tableNames('x'.repeat(57))).not.toThrow();
  });

  test('the DDL names both tables, and docs/semantics-mysql.md shows exactly what the adapter creates', () => {
    const ddl = createTablesSql(tableNames('app.locks'));
    expect(ddl).toContain('CREATE TABLE IF NOT EXISTS `app`.`locks` (');
    expect(ddl).toContain('CREATE TABLE IF NOT EXISTS `app`.`locks_fences` (');
    const docs = readFileSync(new URL('../../../docs/semantics-mysql.md', import.meta.url), 'utf8');
    expect(docs).toContain(`\`\`\`sql\n${createTablesSql(tableNames())}\n\`\`\``);
  });
});

describe('options', () => {
  test('bad options are typed errors before anything connects', () => {
    const pool = mysql.createPool(URL_);
    const cases: unknown[] = [
      {},
      { url: URL_, pool },
      { url: URL_, table: 'Bad Name' },
      { url: URL_, createTables: 'no' },
      { url: URL_, pollIntervalMs: 0 },
      { url: URL_, connectTimeoutMs: Infinity },
      { url: URL_, poolSize: 3 },
      { url: `${URL_}?table=a`, table: 'b' },
      { pool: { query: () => undefined } },
      null,
    ];
    for (const [i, options] of cases.entries()) {
      expect(() => createMysqlProvider(options as never), `case ${i}`).toThrow(invalid);
    }
    pool.end();
  });

  test('createLockProvider: mysql: loads this adapter; unknown adapter options are refused by name', async () => {
    const provider = await createLockProvider(URL_, { adapter: { table: 'my_locks', pollIntervalMs: 100 } });
    expect(provider.backend).toBe('mysql');
    expect(provider.capabilities).toMatchObject({ fencing: 'strict', wakeUp: 'poll', crossProcess: true });
    await provider.close();
    await expect(createLockProvider(URL_, { adapter: { pool: {} } })).rejects.toThrow(/adapter\.pool/);
    await expect(createLockProvider(URL_, { adapter: { tabel: 'x' } })).rejects.toThrow(invalid);
  });
});
