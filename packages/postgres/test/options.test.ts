import { createLockProvider, ErrorCode } from '@holdfast/core';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { createPostgresProvider, parsePostgresUrl, tableNames } from '../src/index.js';

const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
// A closed loopback port: nothing here may connect anyway, every case fails before any I/O.
const URL_ = 'postgres://u@127.0.0.1:1/db';

describe('postgres URLs', () => {
  test("Holdfast's parameters are taken out; pg's pass through in the connection string", () => {
    const parsed = parsePostgresUrl(
      'postgresql://u:p%40ss@db.local:5433/app?sslmode=require&table=app.locks&createTables=false&pollInterval=1s500ms&connectTimeout=2s&application_name=x',
    );
    expect(parsed).toEqual({
      connectionString: 'postgresql://u:p%40ss@db.local:5433/app?sslmode=require&application_name=x',
      table: 'app.locks',
      createTables: false,
      pollIntervalMs: 1500,
      connectTimeoutMs: 2000,
    });
    expect(parsePostgresUrl(new URL('postgres://h/db'))).toEqual({ connectionString: 'postgres://h/db' });
    expect(parsePostgresUrl('postgres://h/db?mode=session')).toEqual({ connectionString: 'postgres://h/db', mode: 'session' });
  });

  test('bad URLs are InvalidArgument errors, and the message never shows the password', () => {
    for (const url of [
      'mysql://h/db',
      'postgres://h/db?tabel=x',
      'postgres://h/db?createTables=maybe',
      'postgres://h/db?pollInterval=soon',
      'postgres://h/db?mode=advisory',
      'not a url',
    ]) {
      expect(() => parsePostgresUrl(url), url).toThrow(invalid);
    }
    expect(() => parsePostgresUrl('postgres://u:hunter2@h/db?nope=1')).not.toThrow(/hunter2/);
  });
});

describe('table names', () => {
  test('name or schema.name, quoted; fences and channel follow the name', () => {
    expect(tableNames()).toEqual({
      name: 'holdfast_locks',
      locks: '"holdfast_locks"',
      fences: '"holdfast_locks_fences"',
      channel: 'holdfast_locks',
    });
    expect(tableNames('app.locks')).toMatchObject({ locks: '"app"."locks"', fences: '"app"."locks_fences"' });
  });

  test('anything that is not a plain lower-case identifier is refused before any SQL is built', () => {
    for (const name of ['', 'Locks', 'a.b.c', 'locks; drop table x', 'lo"cks', '1locks', 'a-b', 'x'.repeat(57), 42]) {
      expect(() => tableNames(name), String(name)).toThrow(invalid);
    }
    expect(() => tableNames('x'.repeat(56))).not.toThrow();
  });
});

describe('options', () => {
  test('bad options are typed errors before anything connects', () => {
    const cases: unknown[] = [
      {},
      { url: URL_, pool: new pg.Pool() },
      { url: URL_, table: 'Bad Name' },
      { url: URL_, createTables: 'no' },
      { url: URL_, pollIntervalMs: 0 },
      { url: URL_, connectTimeoutMs: Infinity },
      { url: URL_, poolSize: 3 },
      { url: `${URL_}?table=a`, table: 'b' },
      { url: URL_, mode: 'sessions' },
      { url: `${URL_}?mode=session`, mode: 'lease' },
      { url: URL_, mode: 'session', pollIntervalMs: 500 },
      { url: `${URL_}?mode=session&pollInterval=1s` },
      { pool: { query: () => undefined } },
      null,
    ];
    for (const options of cases) {
      expect(() => createPostgresProvider(options as never), JSON.stringify(options)).toThrow(invalid);
    }
  });

  test('createLockProvider: postgres: and postgresql: load this adapter; unknown adapter options are refused by name', async () => {
    for (const scheme of ['postgres', 'postgresql']) {
      const provider = await createLockProvider(`${scheme}://u@127.0.0.1:1/db`, { adapter: { table: 'my_locks' } });
      expect(provider.backend).toBe('postgres');
      await provider.close();
    }
    await expect(createLockProvider(URL_, { adapter: { pool: new pg.Pool() } })).rejects.toThrow(/adapter\.pool/);
    await expect(createLockProvider(URL_, { adapter: { tabel: 'x' } })).rejects.toThrow(invalid);
    const session = await createLockProvider(URL_, { adapter: { mode: 'session' } });
    expect(session.capabilities.renewal).toBe('backend');
    await session.close();
  });
});
