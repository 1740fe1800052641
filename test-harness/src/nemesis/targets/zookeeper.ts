import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { type ManagedProcess, spawnServer } from '../../servers/process.js';
import { serverVersions } from '../../servers/versions.js';
import { zookeeperJar } from '../../servers/zookeeper.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

/** ZooKeeper's own ports: each member has a namespace of its own, so nothing else listens there. */
const CLIENT = 2181;
const QUORUM = 2888;
const ELECTION = 3888;
const MEMBERS = ['s0', 's1', 's2'];
/** Three JVMs starting on a loaded 2-core machine, then an election. */
const START_BOUND_MS = 120_000;
/**
 * Members not serving by then are relaunched, once per wait: twice in CI a fresh ensemble never
 * finished its first election in 120 s (never seen when run here, by itself or in the whole
 * harness); a member that crashes and comes back is an event ZooKeeper's election handles.
 */
const RELAUNCH_AFTER_MS = 40_000;

/**
 * tickTime 500 ms as the harness's own ensemble: sessions of 1-60 s are allowed, and a follower that
 * loses its leader (or a leader its quorum) stops serving within syncLimit ticks, 2 s.
 */
function config(dataDir: string, me: string, addresses: readonly string[]): string {
  return `${[
    'tickTime=500',
    'initLimit=20',
    'syncLimit=4',
    'minSessionTimeout=1000',
    'maxSessionTimeout=60000',
    `dataDir=${dataDir}`,
    `clientPort=${CLIENT}`,
    `clientPortAddress=${me}`,
    'admin.enableServer=false',
    '4lw.commands.whitelist=srvr',
    'quorumListenOnAllIPs=false',
    'autopurge.purgeInterval=0',
    'forceSync=no',
    ...addresses.map((address, i) => `server.${i + 1}=${address}:${QUORUM}:${ELECTION}`),
  ].join('\n')}\n`;
}

/**
 * Three ZooKeeper members (Debian's jar), each in its own namespace on its 10.213 address. Worker w
 * names every member, s(w mod 3) first (the client library picks among them itself). The runner asks
 * each member's mode with the `srvr` four-letter word, sent by bash from inside its own namespace.
 */
export function zookeeperTarget(): NemesisTarget {
  let dir: string | undefined;
  let rig: NetworkRig | undefined;
  let jar = '';
  const servers = new ServerProcesses();
  const address = (i: number): string => rig!.addressOf(MEMBERS[i]!);

  /** What the member's `srvr` says: its mode, and the answer's first line or exit code for an error message. */
  const probe = async (i: number): Promise<{ mode: string | null; said: string }> => {
    const script = `exec 3<>/dev/tcp/${address(i)}/${CLIENT} && printf srvr >&3 && cat <&3`;
    const { code, stdout } = await runIn(rig!, MEMBERS[i]!, '/bin/bash', ['-c', script], 3000);
    // Read whatever the exit code: cat may report a reset after the whole answer arrived.
    const mode = /^Mode: (\w+)/m.exec(stdout)?.[1] ?? null;
    return { mode, said: mode ? `Mode: ${mode}` : `exit ${code}: ${stdout.trim().split('\n')[0] ?? ''}` };
  };
  const leaderIndex = async (): Promise<number> =>
    (await Promise.all(MEMBERS.map((_, i) => probe(i)))).findIndex((p) => p.mode === 'leader');

  const launch = (i: number): ManagedProcess => {
    const spec = serverVersions().java.zookeeper;
    const [cmd, argv] = rig!.commandIn(MEMBERS[i]!, 'java', [
      // Small and quick to start, as the harness's own ensemble: three JVMs share 2 cores with the workers.
      '-Xmx128m',
      '-XX:+UseSerialGC',
      '-XX:TieredStopAtLevel=1',
      '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
      '-Dzookeeper.jmx.log4j.disable=true',
      '-cp',
      `${jar}:${spec.logBinding}`,
      spec.main,
      join(dir!, `zoo-${i + 1}.cfg`),
    ]);
    return spawnServer(`nemesis-zookeeper-${i}`, cmd, argv);
  };
  const serving = async (what: string): Promise<void> => {
    const began = performance.now();
    let relaunched: number[] | null = null;
    let last: { mode: string | null; said: string }[] = [];
    const detail = (): string => {
      const said = last.map((p, i) => `${MEMBERS[i]}: ${p.said}`).join('; ');
      const again = relaunched
        ? `relaunched after ${RELAUNCH_AFTER_MS} ms: ${relaunched.map((i) => MEMBERS[i]).join(', ')}`
        : 'none relaunched';
      return `srvr: ${said}; ${again}`;
    };
    const ready = async (): Promise<boolean> => {
      last = await Promise.all(MEMBERS.map((_, i) => probe(i)));
      const idle = MEMBERS.flatMap((_, i) => (last[i]!.mode === 'leader' || last[i]!.mode === 'follower' ? [] : [i]));
      if (idle.length === 0) return last.some((p) => p.mode === 'leader');
      if (relaunched === null && performance.now() - began > RELAUNCH_AFTER_MS) {
        relaunched = idle;
        for (const i of idle) await servers.replace(i, () => launch(i), 'kill');
      }
      return false;
    };
    await servers.waitUntil(what, ready, START_BOUND_MS, detail);
  };

  return {
    backend: 'zookeeper',
    serverHosts: MEMBERS,
    async start(network) {
      rig = network;
      const found = await zookeeperJar();
      if (!found) throw new Error('ZooKeeper or java not found; run `npm run servers:install`');
      jar = found;
      dir = makeTempDir('nemesis-zookeeper');
      const addresses = MEMBERS.map((_, i) => address(i));
      MEMBERS.forEach((host, i) => {
        const dataDir = join(dir!, host);
        mkdirSync(dataDir, { recursive: true });
        writeFileSync(join(dataDir, 'myid'), `${i + 1}\n`);
        writeFileSync(join(dir!, `zoo-${i + 1}.cfg`), config(dataDir, addresses[i]!, addresses));
        servers.add(launch(i));
      });
      await serving('three ZooKeeper members serving with a leader');
    },
    urlFor: (worker) => {
      const first = worker % MEMBERS.length;
      const order = MEMBERS.map((_, j) => (first + j) % MEMBERS.length);
      // A 4 s session, the TTL the scenarios ask for: loss detection and expiry on the same scale.
      return `zookeeper://${order.map((i) => `${address(i)}:${CLIENT}`).join(',')}/holdfast-nemesis?sessionTimeout=4s`;
    },
    async leader() {
      const index = await leaderIndex();
      if (index < 0) throw new Error('no ZooKeeper member says it leads');
      return MEMBERS[index]!;
    },
    async restart(host) {
      const i = MEMBERS.indexOf(host);
      if (i < 0) throw new RangeError(`no ZooKeeper member in ${host}`);
      await servers.replace(i, () => launch(i));
      await serving(`${host} restarted, three members serving with a leader`);
    },
    async stop() {
      // SIGKILL: the data dir goes with the run, and a JVM's graceful stop costs seconds per member.
      await servers.stopAll('kill');
      if (dir) removeTempDir(dir);
    },
  };
}
