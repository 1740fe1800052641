import { redisServerBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePorts, retryOnPortClash } from './ports.js';
import { redisPing } from './probes.js';
import { type ManagedProcess, runToCompletion, spawnServer } from './process.js';
import { infoFields, redisCli, signalProcess } from './redis-cli.js';
import { pollUntil, waitUntilReady } from './wait.js';

/** A node of a test Cluster as CLUSTER NODES reports it. */
export interface ClusterNodeInfo {
  /** The address the node announces (127.0.0.1 here; a namespace's own address in the nemesis). */
  address: string;
  port: number;
  id: string;
  role: 'primary' | 'replica';
  /** The primary's id, for a replica. */
  primaryId: string | null;
  /** Slot ranges as `[from, to]`, for a primary. */
  slots: [number, number][];
  failed: boolean;
}

export interface RedisClusterServers {
  /** `redis+cluster://127.0.0.1:a,127.0.0.1:b,...`: every node as a seed. */
  url: string;
  ports: number[];
  /** The cluster-node-timeout the nodes run with, in ms. */
  nodeTimeoutMs: number;
  /** CLUSTER NODES as seen by a live node. */
  nodes(): Promise<ClusterNodeInfo[]>;
  /** The port of the primary that serves `slot` now. */
  primaryOf(slot: number): Promise<number>;
  /** SIGKILL one node (its data is gone; its nodes.conf stays, so restart() rejoins it). */
  kill(port: number): Promise<void>;
  /** Start a killed node again on its port: it rejoins, as a replica if it was failed over. */
  restart(port: number): Promise<void>;
  /** SIGSTOP / SIGCONT one node: hung, as its peers and clients see it. */
  pause(port: number): void;
  resume(port: number): void;
  /** Until every node that runs reports cluster_state:ok and all 16384 slots are covered by a live primary. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** `redis-cli --cluster` with the given arguments, to the end (reshard, rebalance, ...). */
  clusterTool(args: string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

// Small enough that a failover takes a couple of seconds in a test, large enough that a loaded
// 2-core machine does not fail nodes over by itself.
const NODE_TIMEOUT_MS = 2000;

/** CLUSTER NODES' text, one node a line. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, addr, flags, primaryId, , , , , ...slotFields] = line.split(' ');
      const [address, port] = addr!.split('@')[0]!.split(':');
      const flagSet = new Set(flags!.split(','));
      const slots = slotFields
        .filter((s) => !s.startsWith('['))
        .map((s): [number, number] => {
          const [from, to] = s.split('-');
          return [Number(from), Number(to ?? from)];
        });
      return {
        address: address!,
        port: Number(port),
        id: id!,
        role: flagSet.has('master') ? 'primary' : 'replica',
        primaryId: primaryId === '-' ? null : primaryId!,
        slots,
        failed: flagSet.has('fail') || flagSet.has('fail?') || flagSet.has('noaddr'),
      };
    });
}

async function launchNode(bin: string, port: number, dir: string): Promise<ManagedProcess> {
  const proc = spawnServer(`redis-cluster:${port}`, bin, [
    ...['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'no', '--dir', dir, '--logfile', ''],
    ...['--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
    ...['--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'],
  ]);
  await waitUntilReady(proc, 'PING', () => redisPing('127.0.0.1', port), 15_000);
  return proc;
}

/** 3 primaries and 3 replicas (one each) on free loopback ports, every slot assigned, nothing persisted but nodes.conf. */
export async function startRedisCluster(): Promise<RedisClusterServers> {
  return retryOnPortClash(async () => startOn(await freePorts(6)));
}

async function startOn(ports: number[]): Promise<RedisClusterServers> {
  const bin = await redisServerBinary();
  if (!bin) throw new Error('redis-server not found on PATH; run `npm run servers:install`');
  const dir = makeTempDir('redis-cluster');
  const procs = new Map<number, ManagedProcess>();
  const stopAll = async (): Promise<void> => {
    for (const p of procs.values()) signalProcess(p.pid, 'SIGCONT');
    await Promise.all([...procs.values()].map((p) => p.stop()));
    procs.clear();
    removeTempDir(dir);
  };
  const paused = new Set<number>();
  const live = (): number[] => ports.filter((p) => procs.get(p) && !procs.get(p)!.exited() && !paused.has(p));
  const nodes = async (): Promise<ClusterNodeInfo[]> => {
    let lastError: unknown;
    for (const port of live()) {
      try {
        return parseClusterNodes(await redisCli(port, ['cluster', 'nodes'], 1000));
      } catch (err) {
        lastError = err; // paused or dying: ask the next one
      }
    }
    throw new Error(`no node answers CLUSTER NODES: ${String(lastError)}`);
  };
  const waitHealthy = async (timeoutMs = 30_000): Promise<void> => {
    await pollUntil(
      'cluster_state:ok on every node and every slot served by a live primary',
      async () => {
        // A paused node neither answers nor serves: healthy means its slots moved to a replica.
        const running = live();
        for (const port of running) {
          const info = infoFields(await redisCli(port, ['cluster', 'info'], 1000));
          if (info.get('cluster_state') !== 'ok' || info.get('cluster_slots_ok') !== '16384') return false;
        }
        const served = (await nodes())
          .filter((n) => n.role === 'primary' && !n.failed && running.includes(n.port))
          .flatMap((n) => n.slots)
          .reduce((sum, [from, to]) => sum + to - from + 1, 0);
        return served === 16384;
      },
      timeoutMs,
    );
  };
  try {
    for (const port of ports) procs.set(port, await launchNode(bin, port, dir));
    await runToCompletion('redis-cli --cluster create', 'redis-cli', [
      ...['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`)],
      ...['--cluster-replicas', '1', '--cluster-yes'],
    ]);
    await waitHealthy();
    // Every node must know the replicas, and they their primary's data, before a test kills anything.
    await pollUntil('every node sees 3 replicas, every replica in sync', async () => {
      for (const port of ports) {
        const view = parseClusterNodes(await redisCli(port, ['cluster', 'nodes'], 1000));
        if (view.filter((n) => n.role === 'replica').length !== 3) return false;
        const info = infoFields(await redisCli(port, ['info', 'replication'], 1000));
        if (info.get('role') === 'slave' && info.get('master_link_status') !== 'up') return false;
      }
      return true;
    });
  } catch (err) {
    await stopAll();
    throw err;
  }
  const known = (port: number): ManagedProcess | undefined => {
    if (!ports.includes(port)) throw new RangeError(`no cluster node on port ${port}`);
    return procs.get(port);
  };
  return {
    url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
    ports,
    nodeTimeoutMs: NODE_TIMEOUT_MS,
    nodes,
    primaryOf: async (slot) => {
      const owner = (await nodes()).find((n) => n.role === 'primary' && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b));
      if (!owner) throw new Error(`no live primary serves slot ${slot}`);
      return owner.port;
    },
    kill: async (port) => {
      paused.delete(port);
      await known(port)?.kill();
      procs.delete(port);
    },
    restart: async (port) => {
      const old = known(port);
      paused.delete(port);
      if (old) {
        signalProcess(old.pid, 'SIGCONT');
        await old.stop();
      }
      procs.set(port, await launchNode(bin, port, dir));
    },
    pause: (port) => {
      signalProcess(known(port)?.pid, 'SIGSTOP');
      paused.add(port);
    },
    resume: (port) => {
      signalProcess(known(port)?.pid, 'SIGCONT');
      paused.delete(port);
    },
    waitHealthy,
    clusterTool: (args, timeoutMs = 120_000) => runToCompletion('redis-cli --cluster', 'redis-cli', ['--cluster', ...args], {}, timeoutMs),
    stop: stopAll,
  };
}
