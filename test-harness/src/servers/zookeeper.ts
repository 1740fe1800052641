import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { onPath } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePorts, retryOnPortClash } from './ports.js';
import { type ManagedProcess, spawnServer } from './process.js';
import { serverVersions } from './versions.js';
import { pollUntil, waitUntilReady } from './wait.js';
import { zookeeperMode } from './zookeeper-probe.js';

/** A ZooKeeper ensemble of the harness's own, whose members fault tests kill, restart and pause. */
export interface ZookeeperEnsemble {
  /** `zookeeper://127.0.0.1:a,127.0.0.1:b,127.0.0.1:c` */
  readonly url: string;
  readonly clientPorts: readonly number[];
  /** Index of the member that is leader now (asks the live ones); rejects while there is none. */
  leaderIndex(): Promise<number>;
  /** Waits until a quorum serves: every live, unpaused member is leader or follower. Returns the leader. */
  waitForQuorum(timeoutMs?: number): Promise<number>;
  /** SIGKILL member i: a crash, its connections drop. */
  kill(i: number): Promise<void>;
  /** Start member i again with its ports and data dir; resolves once it answers (not necessarily in quorum). */
  restart(i: number): Promise<void>;
  /** SIGSTOP member i: its sockets stay open and nothing answers. */
  pause(i: number): void;
  /** SIGCONT what pause() stopped. */
  resume(i: number): void;
  /** Stops every member and removes the data dirs. */
  stop(): Promise<void>;
}

/** The JVM and Debian's ZooKeeper jar, or null when either is missing. */
export async function zookeeperJar(): Promise<string | null> {
  const { jar } = serverVersions().java.zookeeper;
  return existsSync(jar) && onPath('java') ? jar : null;
}

/** One standalone server on a free loopback port, its data in a temp dir. */
export async function startZookeeper(): Promise<{ url: string; port: number; stop(): Promise<void> }> {
  const ensemble = await startZookeeperEnsemble(1);
  return { url: ensemble.url, port: ensemble.clientPorts[0]!, stop: () => ensemble.stop() };
}

interface MemberPorts {
  readonly client: number;
  readonly quorum: number;
  readonly election: number;
}

/** n members (1 = standalone) on one host, each with its own ports, data dir and myid. */
export function startZookeeperEnsemble(n = 3): Promise<ZookeeperEnsemble> {
  return retryOnPortClash(() => startOnce(n));
}

/**
 * tickTime 500 ms: sessions of 1-60 s are allowed (the bounds are set, not derived from the tick),
 * followers that lose the leader notice within syncLimit ticks, so a re-election takes a few seconds.
 */
function config(dataDir: string, me: MemberPorts, members: readonly MemberPorts[]): string {
  const lines = [
    'tickTime=500',
    'initLimit=20',
    'syncLimit=4',
    'minSessionTimeout=1000',
    'maxSessionTimeout=60000',
    `dataDir=${dataDir}`,
    `clientPort=${me.client}`,
    'clientPortAddress=127.0.0.1',
    'admin.enableServer=false',
    '4lw.commands.whitelist=srvr,ruok,mntr,cons',
    // Every member on loopback: the default would try all of a host's addresses.
    'quorumListenOnAllIPs=false',
    'autopurge.purgeInterval=0',
    // No fsync of the transaction log: a write lost only if the machine crashes, as with the
    // harness's PostgreSQL (fsync=off); a killed member keeps what it wrote (the page cache).
    'forceSync=no',
  ];
  if (members.length > 1) {
    members.forEach((p, i) => {
      lines.push(`server.${i + 1}=127.0.0.1:${p.quorum}:${p.election}`);
    });
  }
  return `${lines.join('\n')}\n`;
}

async function startOnce(n: number): Promise<ZookeeperEnsemble> {
  const jar = await zookeeperJar();
  if (!jar) throw new Error('ZooKeeper or java not found; run `npm run servers:install` (apt-get install zookeeper)');
  const spec = serverVersions().java.zookeeper;
  const ports = await freePorts(3 * n);
  const members: MemberPorts[] = Array.from({ length: n }, (_, i) => ({
    client: ports[3 * i]!,
    quorum: ports[3 * i + 1]!,
    election: ports[3 * i + 2]!,
  }));
  const root = makeTempDir('zookeeper');
  const configs = members.map((me, i) => {
    const dataDir = join(root, String(i + 1));
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'myid'), `${i + 1}\n`);
    const file = join(root, `zoo-${i + 1}.cfg`);
    writeFileSync(file, config(dataDir, me, members));
    return file;
  });
  const procs: (ManagedProcess | undefined)[] = new Array(n).fill(undefined);
  const paused = new Set<number>();
  const launch = (i: number): ManagedProcess =>
    spawnServer(`zookeeper-${i + 1}:${members[i]!.client}`, 'java', [
      // Small and quick to start: three members share a 2-core machine with the tests.
      '-Xmx128m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Xshare:auto',
      '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
      '-Dzookeeper.jmx.log4j.disable=true',
      '-cp',
      `${jar}:${spec.logBinding}`,
      spec.main,
      configs[i]!,
    ]);
  const live = (): number[] => procs.flatMap((p, i) => (p && !p.exited() && !paused.has(i) ? [i] : []));
  const answers = (i: number) => async (): Promise<boolean> => (await zookeeperMode(members[i]!.client)) !== undefined;

  const leaderIndex = async (): Promise<number> => {
    for (const i of live()) {
      const mode = await zookeeperMode(members[i]!.client).catch(() => 'not serving' as const);
      if (mode === 'leader' || mode === 'standalone') return i;
    }
    throw new Error('no live ZooKeeper member is leader');
  };

  const waitForQuorum = async (timeoutMs = 60_000): Promise<number> => {
    let leader = -1;
    await pollUntil(
      'a ZooKeeper quorum serving',
      async () => {
        const modes = await Promise.all(live().map((i) => zookeeperMode(members[i]!.client)));
        if (modes.some((m) => m === 'not serving')) return false;
        leader = await leaderIndex();
        return true;
      },
      timeoutMs,
    );
    return leader;
  };

  const stop = async (): Promise<void> => {
    // SIGKILL ends a stopped process too.
    paused.clear();
    await Promise.all(procs.map((p) => p?.kill()));
    removeTempDir(root);
  };

  try {
    for (let i = 0; i < n; i++) procs[i] = launch(i);
    for (let i = 0; i < n; i++) await waitUntilReady(procs[i]!, 'its client port', answers(i), 60_000);
    await waitForQuorum();
  } catch (err) {
    const tails = procs.map((p) => (p ? `--- ${p.name}\n${p.outputTail(15)}` : '')).join('\n');
    await stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${tails}`);
  }

  const check = (i: number): ManagedProcess | undefined => {
    if (i < 0 || i >= n) throw new RangeError(`no ZooKeeper member ${i}`);
    return procs[i];
  };
  return {
    url: `zookeeper://${members.map((p) => `127.0.0.1:${p.client}`).join(',')}`,
    clientPorts: members.map((p) => p.client),
    leaderIndex,
    waitForQuorum,
    kill: async (i) => {
      paused.delete(i);
      await check(i)?.kill();
    },
    restart: async (i) => {
      await check(i)?.kill();
      paused.delete(i);
      procs[i] = launch(i);
      await waitUntilReady(procs[i]!, 'its client port', answers(i), 60_000);
    },
    pause: (i) => {
      const proc = check(i);
      if (proc && !proc.exited()) process.kill(proc.pid, 'SIGSTOP');
      paused.add(i);
    },
    resume: (i) => {
      const proc = check(i);
      if (proc && !proc.exited()) process.kill(proc.pid, 'SIGCONT');
      paused.delete(i);
    },
    stop,
  };
}
