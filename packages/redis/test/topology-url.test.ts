import { createLockProvider, ErrorCode } from '@holdfast/core';
import { describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { parseTopologyUrl } from '../src/topology-url.js';

// Pure parsing: the hosts below are never connected to (10.0.0.x appears only as text).
describe('redis+cluster and redis+sentinel URLs', () => {
  test('a Cluster: every seed, shared credentials, TLS with rediss+, db 0 only, prefix', () => {
    const { topology, db, prefix } = parseTopologyUrl('rediss+cluster://u:p%40ss@10.0.0.1:7001,10.0.0.2,[::1]:7003/0?prefix=app:');
    expect(topology).toEqual({
      kind: 'cluster',
      seeds: [
        { host: '10.0.0.1', port: 7001 },
        { host: '10.0.0.2', port: 6379 },
        { host: '::1', port: 7003 },
      ],
      shared: { username: 'u', password: 'p@ss', tls: {} },
    });
    expect(db).toBe(0);
    expect(prefix).toBe('app:');
  });

  test('Sentinel: the Sentinels (default port 26379), the monitored name, a db, the failover detector on', () => {
    const { topology, db } = parseTopologyUrl('redis+sentinel://:secret@10.0.0.1,10.0.0.2:26380/my%20master/3');
    expect(db).toBe(3);
    expect(topology).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
      ],
      name: 'my master',
      node: {
        password: 'secret',
        db: 3,
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '10.0.0.2', port: 26380 },
        ],
        name: 'my master',
        failoverDetector: true,
      },
    });
  });

  test('bad topology URLs are InvalidArgument errors, before anything connects', () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
    for (const url of [
      'redis+cluster://',
      'redis+cluster://h:1,h:1',
      'redis+cluster://h:1/2',
      'redis+cluster://h:0',
      'redis+cluster://h:70000',
      'redis+cluster://h:1?quorum=h:2',
      'redis+sentinel://h:26379',
      'redis+sentinel://h:26379/name/x',
      'redis+sentinel://h:26379/name/1/2',
      'redis+mesh://h:1',
    ]) {
      expect(() => createRedisProvider({ url }), url).toThrow(invalid);
    }
  });

  test('createLockProvider routes both schemes to this adapter', async () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
    await expect(createLockProvider('redis+cluster://h:1/5')).rejects.toThrow(invalid);
    await expect(createLockProvider('redis+sentinel://h:1')).rejects.toThrow(invalid);
  });

  test('replicas and replicaTimeoutMs: checked before anything connects', async () => {
    const invalid = expect.objectContaining({ code: ErrorCode.InvalidArgument });
    const url = 'redis+sentinel://127.0.0.1:1/mymaster';
    for (const bad of [{ replicas: -1 }, { replicas: 1.5 }, { replicas: 65 }, { replicaTimeoutMs: 0 }, { replicaTimeoutMs: 2000 }]) {
      expect(() => createRedisProvider({ url, ...bad }), JSON.stringify(bad)).toThrow(invalid);
    }
    expect(() => createRedisProvider({ url: 'redis://127.0.0.1:1?quorum=127.0.0.1:2,127.0.0.1:3', replicas: 1 })).toThrow(invalid);
    const accepted = createRedisProvider({ url, replicas: 1, replicaTimeoutMs: 2000, commandTimeoutMs: 3000 });
    await accepted.close();
  });
});
