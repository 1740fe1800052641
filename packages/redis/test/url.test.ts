import { createLockProvider, ErrorCode } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { parseRedisUrl } from '../src/index.js';

describe('redis URLs', () => {
  test('single node, with credentials, database and prefix', () => {
    const parsed = parseRedisUrl(new URL('redis://user:p%40ss@cache.local:6380/2?prefix=app:'));
    expect(parsed.nodes).toEqual([{ host: 'cache.local', port: 6380, db: 2, username: 'user', password: 'p@ss' }]);
    expect(parsed.db).toBe(2);
    expect(parsed.prefix).toBe('app:');
  });

  test('defaults: port 6379, db 0, no prefix; rediss: turns TLS on', () => {
    expect(parseRedisUrl(new URL('redis://localhost'))).toEqual({ nodes: [{ host: 'localhost', port: 6379, db: 0 }], db: 0, prefix: '' });
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
    expect(() => parseRedisUrl(new URL('redis://h/abc'))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
    expect(() => parseRedisUrl(new URL('redis://h?quorum=a:b:c'))).toThrow(expect.objectContaining({ code: ErrorCode.InvalidArgument }));
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
