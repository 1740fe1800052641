import type { CallContext, GrantRequest } from '@holdfast/core/backend';
import { until } from '@holdfast/test-harness/helpers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { KeyNames } from '../src/key-names.js';
import { NodeSet } from '../src/node-set.js';
import { QuorumBackend } from '../src/quorum-backend.js';
import { RedisNode } from '../src/redis-node.js';
import { SingleNodeBackend } from '../src/single-node-backend.js';
import { untilAborted } from '../src/until-aborted.js';
import { type RedisProcess, startRedisProcess } from './redis-process.js';

/**
 * A call as core makes it, except that reading `signal` fails the test: on a connected server the
 * adapter must not build an AbortController per call (it cost as much client CPU as the round trip).
 */
function callWithoutSignal(): CallContext & { abort(reason: unknown): void } {
  const listeners: ((reason: unknown) => void)[] = [];
  return {
    get signal(): AbortSignal {
      throw new Error('the adapter read call.signal on its hot path');
    },
    onAbort: (listener) => void listeners.push(listener),
    abort: (reason) => {
      for (const listener of listeners) listener(reason);
    },
  };
}

let n = 0;
function request(key: string): GrantRequest {
  return { key, lockId: `call-signal-${++n}`, owner: 'test', reason: undefined, ttlMs: 10_000, autoRenew: true, onLost: () => undefined };
}

describe('untilAborted with a call', () => {
  test("rejects with a Redis BackendError as soon as the call's onAbort fires, without reading its signal", async () => {
    const call = callWithoutSignal();
    const never = new Promise<string>(() => undefined);
    const raced = untilAborted(never, call, 'acquire').catch((error: unknown) => error);
    call.abort(new Error('deadline'));
    const error = (await raced) as Error;
    expect(error.message).toBe('redis backend failed: acquire: gave up waiting for the server (deadline)');
  });
});

describe.skipIf((await needLocalBinary('redis-server')) !== null)('the grant path reads no signal on a connected server', () => {
  const servers: RedisProcess[] = [];
  const nodeSets: NodeSet[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 3; i++) servers.push(await startRedisProcess());
  });
  afterAll(async () => {
    const closing = new AbortController().signal;
    await Promise.all(nodeSets.map((nodes) => nodes.close(closing)));
    await Promise.all(servers.map((server) => server.stop()));
  });

  async function connected(count: number): Promise<NodeSet> {
    const settings = { db: 0, commandTimeoutMs: 2000, connectTimeoutMs: 3000 };
    const nodes = servers.slice(0, count).map((server) => new RedisNode(`redis ${server.port}`, { port: server.port }, settings));
    const nodeSet = new NodeSet(nodes, { driftFactor: 0.01, straggleMs: 250 });
    nodeSets.push(nodeSet);
    const ready = new AbortController().signal;
    await Promise.all(nodes.map((node) => node.ready({ signal: ready })));
    return nodeSet;
  }

  const waiting = { pollIntervalMs: 2000, splitVoteRetries: 3, retryJitterMs: 50 };

  test('one server: grant, extend and release', async () => {
    const backend = new SingleNodeBackend(await connected(1), new KeyNames('holdfast:', 0), waiting);
    const outcome = await backend.tryGrant(request('single'), callWithoutSignal());
    expect(outcome.granted).toBe(true);
    const grant = outcome.granted ? outcome.grant : undefined;
    expect((await grant!.extend(10_000, callWithoutSignal())).held).toBe(true);
    expect(await grant!.release(callWithoutSignal())).toBe(true);
  });

  test('a quorum of 3, counters level: grant, extend and release', async () => {
    const backend = new QuorumBackend(await connected(3), new KeyNames('holdfast:', 0), waiting);
    // A key's first grant levels the nodes' counters (each starts at its own clock): that sync waits within the call's signal.
    const call = { signal: new AbortController().signal };
    const first = await backend.tryGrant(request('quorum'), call);
    expect(first.granted && (await first.grant.release(call))).toBe(true);
    // A call settles on a majority: under load the third node's grant, sync or release may land later,
    // and a next grant that finds the nodes uneven syncs them again (reading the signal, rightly).
    const keys = new KeyNames('holdfast:', 0).of('quorum');
    const clients = servers.map((server) => new Redis({ port: server.port, lazyConnect: true }));
    try {
      await until(
        async () => {
          const states = await Promise.all(
            clients.map(async (client) => [await client.exists(keys.lock), await client.hget(keys.fence, 'fence')]),
          );
          return states.every(([held, counter]) => held === 0 && counter === states[0]![1]);
        },
        5_000,
        'every node free, with level counters',
      );
    } finally {
      for (const client of clients) client.disconnect();
    }
    const outcome = await backend.tryGrant(request('quorum'), callWithoutSignal());
    expect(outcome.granted).toBe(true);
    const grant = outcome.granted ? outcome.grant : undefined;
    expect((await grant!.extend(10_000, callWithoutSignal())).held).toBe(true);
    expect(await grant!.release(callWithoutSignal())).toBe(true);
  });
});
