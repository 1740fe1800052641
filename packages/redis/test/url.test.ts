import { createLockProvider, ErrorCode } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { parseRedisUrl } from '../src/url.js';

describe('redis URLs', () => {
  test('single node, with credentials, database and prefix', () => {
    const parsed = parseRedisUrl(new URL('redis://user:p%40ss@cache.local:6380/2?prefix=app:'));
    expect(parsed.nodes).toEqual([{ host: 'cache.local', port: 6380, db: 2, username: 'user', password: 'p@ss' }]);
    expect(parsed.db).toBe(2);
    expect(parsed.prefix).toBe('app:');
  });

  test('defaults: port 6379, db 0, prefix left to the provider; ?prefix= (empty) is no prefix; rediss: turns TLS on', () => {
    expect(parseRedisUrl(new URL('redis://localhost'))).toEqual({
      nodes: [{ host: 'localhost', port: 6379, db: 0 }],
      db: 0,
      prefix: undefined,
    });
    expect(parseRedisUrl('redis://localhost?prefix=').prefix).toBe('');
    expect(parseRedisUrl(new URL('rediss://h:1')).nodes[0]!.tls).toEqual({});
  });

  test('quorum: the other nodes go in ?quorum=, sharing credentials and db (commas in the host are refused by URL)', () => {
    expect(() => new URL('redis://127.0.0.1:7001,127.0.0.1:7002')).toThrow();
    const parsed = parseRedisUrl(new URL('redis://:secret@10.0.0.1:7001/1?quorum=10.0.0.2:7002,[::1]:7003'));
    expect(parsed.nodes).toEqual([
      { host: '10.0.0.1', port: 7001, db: 1, password: 'secret' },
      { host: '10.0.0.2', port: 7002, db: 1, password: 'secret' },
      { host: '::1', port: 7003, db: 1, password: 'secret' },
    ]);
  });

  test('bad URLs are InvalidArgument errors', () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
    for (const url of [
      'redis://h/abc',
      'redis://h/-1',
      'redis://h/1.5',
      'redis://h/1e1',
      'redis://h/0/extra',
      'redis://h:notaport',
      'redis://h:0',
      'redis://h?quorum=a:b:c',
      'redis://h?quorum=u:p@h2:1',
      'redis://h?db=2',
      'not a url',
    ]) {
      expect(() => parseRedisUrl(url), url).toThrow(invalid);
    }
  });

  test('a quorum that lists one node twice is refused (it would never reach a majority of distinct servers)', () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(/listed twice/) });
    expect(() => parseRedisUrl('redis://127.0.0.1:7001?quorum=127.0.0.1:7002,127.0.0.1:7001')).toThrow(invalid);
    expect(() => parseRedisUrl('redis://h:7001?quorum=H:7001,x:1')).toThrow(invalid);
    expect(() => parseRedisUrl('redis://h?quorum=h:6379,x:1')).toThrow(invalid);
  });

  test('createLockProvider: bad Redis URLs and options are InvalidArgument errors before anything connects', async () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
    await expect(createLockProvider('redis://h:notaport')).rejects.toEqual(invalid);
    await expect(createLockProvider('redis://127.0.0.1:1/-3')).rejects.toEqual(invalid);
    await expect(createLockProvider('redis://127.0.0.1:1?quorum=127.0.0.1:2,127.0.0.1:1')).rejects.toEqual(invalid);
    await expect(createLockProvider('redis://127.0.0.1:1', { adapter: { prefx: 'typo:' } })).rejects.toEqual(invalid);
    await expect(createLockProvider('redis://127.0.0.1:1', { adapter: { pollIntervalMs: -1 } })).rejects.toEqual(invalid);
    await expect(createLockProvider('redis://127.0.0.1:1?prefix=a:', { adapter: { prefix: 'b:' } })).rejects.toEqual(invalid);
    expect(() => createRedisProvider({ url: 'redis://127.0.0.1:1', nodes: [{ port: 2 }] })).toThrow(invalid);
    expect(() =>
      createRedisProvider({
        nodes: [
          { port: 1, db: 1 },
          { port: 2, db: 2 },
        ],
      }),
    ).toThrow(invalid);
    expect(() => createRedisProvider({ nodes: [{ port: 1 }, { host: '127.0.0.1', port: 1 }, { port: 2 }] })).toThrow(invalid);
  });

  test('one vocabulary: old option names are refused by their new name, unknown options are refused, provider-level ones accepted', async () => {
    const renamed = expect.objectContaining({
      code: ErrorCode.InvalidArgument,
      message: expect.stringMatching(/safetyPollMs was renamed pollIntervalMs/),
    });
    const unknown = expect.objectContaining({ code: ErrorCode.InvalidArgument, message: expect.stringMatching(/not a Redis option/) });
    expect(() => createRedisProvider({ url: 'redis://127.0.0.1:1', safetyPollMs: 100 } as never)).toThrow(renamed);
    await expect(createLockProvider('redis://127.0.0.1:1', { adapter: { safetyPollMs: 100 } })).rejects.toEqual(renamed);
    expect(() => createRedisProvider({ url: 'redis://127.0.0.1:1', address: 'x' } as never)).toThrow(unknown);
    await expect(createLockProvider('redis://127.0.0.1:1', { adapter: { owner: 'x' } })).rejects.toEqual(unknown);
    const logger = { warn: () => undefined };
    const made = [
      createRedisProvider({
        url: 'redis://127.0.0.1:1',
        pollIntervalMs: 100,
        owner: 'me',
        callTimeoutMs: 100,
        closeTimeoutMs: 100,
        ttlBelowMinimum: 'reject',
        logger,
      }),
      await createLockProvider('redis://127.0.0.1:1', { owner: 'me', ttlBelowMinimum: 'reject', logger, adapter: { pollIntervalMs: 100 } }),
    ];
    try {
      for (const provider of made) expect(provider.owner).toBe('me');
    } finally {
      await Promise.all(made.map((provider) => provider.close()));
    }
  });

  test('createLockProvider routes redis: URLs here; a quorum URL declares fencing "none"', async () => {
    const single = await createLockProvider('redis://127.0.0.1:1');
    const quorum = await createLockProvider('redis://127.0.0.1:1?quorum=127.0.0.1:2,127.0.0.1:3');
    try {
      expect(single.backend).toBe('redis');
      expect(single.capabilities.fencing).toBe('strict');
      expect(quorum.capabilities.fencing).toBe('none');
    } finally {
      await Promise.all([single.close(), quorum.close()]);
    }
  });
});
