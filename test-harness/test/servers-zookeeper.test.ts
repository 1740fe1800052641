// The harness's own ZooKeeper servers: a standalone one and a 3-member ensemble on free loopback
// ports, whose members the fault tests kill, restart and pause. With HOLDFAST_REQUIRE_BACKENDS=all
// a missing ZooKeeper fails the run.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../src/helpers/index.js';
import { startZookeeper, startZookeeperEnsemble, type ZookeeperEnsemble, zookeeperMode } from '../src/servers/index.js';
import { needLocalBinary } from '../src/servers/vitest.js';

const missing = await needLocalBinary('zookeeper');

describe.skipIf(missing !== null)('zookeeper servers of our own', () => {
  test('a standalone server answers on its loopback port and is gone after stop()', async () => {
    const server = await startZookeeper();
    expect(server.url).toBe(`zookeeper://127.0.0.1:${server.port}`);
    expect(await zookeeperMode(server.port)).toBe('standalone');
    await server.stop();
    await expect(zookeeperMode(server.port)).rejects.toThrow();
  });

  describe('a 3-member ensemble', () => {
    let ensemble: ZookeeperEnsemble;
    beforeAll(async () => {
      ensemble = await startZookeeperEnsemble(3);
    }, 120_000);
    afterAll(() => ensemble?.stop(), 60_000);

    test('elects one leader; a killed leader is replaced and rejoins as a follower after restart', async () => {
      const modes = await Promise.all(ensemble.clientPorts.map((port) => zookeeperMode(port)));
      expect(modes.filter((m) => m === 'leader')).toHaveLength(1);
      expect(modes.filter((m) => m === 'follower')).toHaveLength(2);
      const leader = await ensemble.leaderIndex();
      await ensemble.kill(leader);
      const next = await ensemble.waitForQuorum(30_000);
      expect(next).not.toBe(leader);
      await ensemble.restart(leader);
      await ensemble.waitForQuorum(30_000);
      expect(await zookeeperMode(ensemble.clientPorts[leader]!)).toBe('follower');
    });

    test('a paused member answers nothing until resumed', async () => {
      const follower = ((await ensemble.leaderIndex()) + 1) % 3;
      ensemble.pause(follower);
      try {
        await expect(zookeeperMode(ensemble.clientPorts[follower]!)).rejects.toThrow(/no "srvr" reply/);
        // The other two keep a quorum.
        expect(await ensemble.waitForQuorum(30_000)).not.toBe(follower);
      } finally {
        ensemble.resume(follower);
      }
      // A resumed member may first notice that it lost its leader, then rejoins.
      await until(
        async () => ['leader', 'follower'].includes(await zookeeperMode(ensemble.clientPorts[follower]!)),
        30_000,
        'the resumed member serves again',
        { everyMs: 100 },
      );
    });
  });
});
