import { join } from 'node:path';
import { etcdBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePorts, retryOnPortClash } from './ports.js';
import { signalEach } from './proc-tree.js';
import { type ManagedProcess, spawnServer } from './process.js';
import { pollUntil, waitUntilReady } from './wait.js';

/** etcd members on one host: each with its own client and peer port and data dir. */
export interface EtcdCluster {
  /** `etcd://127.0.0.1:a,127.0.0.1:b,...`: every member, for createLockProvider. */
  readonly url: string;
  /** `127.0.0.1:port` of each member's client API. */
  readonly endpoints: string[];
  /** Member i's process id (for SIGSTOP/SIGCONT from a test); -1 while it is not running. */
  pid(i: number): number;
  /** Index of the current Raft leader, asked of the live members; rejects if none knows a live one. */
  leaderIndex(): Promise<number>;
  /** Waits until every live, unpaused member reports the same leader, itself live; returns its index. */
  waitForLeader(timeoutMs?: number): Promise<number>;
  /** SIGKILL member i: a crash, no graceful leave. */
  kill(i: number): Promise<void>;
  /** Start member i again on its ports and data dir; resolves once it answers /health. */
  restart(i: number): Promise<void>;
  /** SIGSTOP member i: its connections stay open and nothing answers. */
  pause(i: number): void;
  /** SIGCONT what pause() stopped. */
  resume(i: number): void;
  /** Stops every member and removes the data dirs. */
  stop(): Promise<void>;
}

interface MemberPorts {
  client: number;
  peer: number;
}

async function requireEtcd(): Promise<string> {
  const bin = await etcdBinary();
  if (!bin) throw new Error('etcd not found (cache or PATH); run `npm run servers:install`');
  return bin;
}

interface Status {
  header: { member_id: string };
  leader: string;
}

/** The member's status through etcd's JSON gateway (POST /v3/maintenance/status): its id and its leader's. */
async function status(endpoint: string): Promise<Status> {
  const res = await fetch(`http://${endpoint}/v3/maintenance/status`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(1000) });
  if (!res.ok) throw new Error(`POST /v3/maintenance/status: HTTP ${res.status}`);
  return (await res.json()) as Status;
}

/** /health is true once the member has a leader and can serve a linearizable read. */
async function healthy(endpoint: string): Promise<boolean> {
  const res = await fetch(`http://${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
  return res.ok && ((await res.json()) as { health?: string }).health === 'true';
}

/** One etcd member on free loopback ports (the suite's single node); data in a temp dir removed at stop. */
export async function startEtcd(): Promise<{ url: string; endpoint: string; stop(): Promise<void> }> {
  const cluster = await startEtcdCluster(1);
  return { url: cluster.url, endpoint: cluster.endpoints[0]!, stop: () => cluster.stop() };
}

/** n etcd members forming one cluster, on free loopback ports. */
export function startEtcdCluster(n = 3): Promise<EtcdCluster> {
  return retryOnPortClash(() => startClusterOnce(n));
}

async function startClusterOnce(n: number): Promise<EtcdCluster> {
  const bin = await requireEtcd();
  const ports = await freePorts(2 * n);
  const members: MemberPorts[] = Array.from({ length: n }, (_, i) => ({ client: ports[2 * i]!, peer: ports[2 * i + 1]! }));
  const root = makeTempDir('etcd-cluster');
  const endpoints = members.map((p) => `127.0.0.1:${p.client}`);
  const initialCluster = members.map((p, i) => `m${i}=http://127.0.0.1:${p.peer}`).join(',');
  const token = `holdfast-${process.pid}-${members[0]!.client}`;
  const procs: (ManagedProcess | undefined)[] = new Array(n).fill(undefined);
  const paused = new Set<number>();

  const launch = (i: number): ManagedProcess => {
    const p = members[i]!;
    return spawnServer(`etcd-${i}:${p.client}`, bin, [
      `--name=m${i}`,
      `--data-dir=${join(root, String(i))}`,
      `--listen-client-urls=http://127.0.0.1:${p.client}`,
      `--advertise-client-urls=http://127.0.0.1:${p.client}`,
      `--listen-peer-urls=http://127.0.0.1:${p.peer}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${p.peer}`,
      `--initial-cluster=${initialCluster}`,
      '--initial-cluster-state=new',
      `--initial-cluster-token=${token}`,
      // etcd's defaults (100 ms heartbeat, 1 s election timeout): the minimum lease TTL is 2 s.
      '--heartbeat-interval=100',
      '--election-timeout=1000',
      '--log-level=warn',
    ]);
  };

  const live = (): number[] => procs.flatMap((p, i) => (p && !p.exited() && !paused.has(i) ? [i] : []));

  const leaderOf = async (i: number): Promise<number> => {
    const s = await status(endpoints[i]!);
    if (s.leader === '0' || s.leader === undefined) return -1;
    // A member's own id is in its status header: find the leader among the live members.
    for (const j of live()) {
      if ((await status(endpoints[j]!)).header.member_id === s.leader) return j;
    }
    return -1;
  };

  const leaderIndex = async (): Promise<number> => {
    for (const i of live()) {
      try {
        const leader = await leaderOf(i);
        if (leader >= 0) return leader;
      } catch {
        // ask the next member
      }
    }
    throw new Error('no live etcd member reports a live leader');
  };

  const waitForLeader = async (timeoutMs = 30_000): Promise<number> => {
    let leader = -1;
    await pollUntil(
      'an etcd leader agreed on by all live members',
      async () => {
        const views = await Promise.all(live().map((i) => leaderOf(i)));
        leader = views[0] ?? -1;
        return leader >= 0 && views.every((v) => v === leader);
      },
      timeoutMs,
    );
    return leader;
  };

  const stop = async (): Promise<void> => {
    for (const i of paused) signalEach([procs[i]!.pid], 'SIGCONT');
    paused.clear();
    await Promise.all(procs.map((p) => p?.stop()));
    removeTempDir(root);
  };

  try {
    for (let i = 0; i < n; i++) procs[i] = launch(i);
    for (let i = 0; i < n; i++) await waitUntilReady(procs[i]!, 'its /health', () => healthy(endpoints[i]!), 60_000);
    await waitForLeader();
  } catch (err) {
    const tails = procs.map((p) => (p ? `--- ${p.name}\n${p.outputTail(15)}` : '')).join('\n');
    await stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${tails}`);
  }

  const check = (i: number): void => {
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new RangeError(`no etcd member ${i}`);
  };
  return {
    url: `etcd://${endpoints.join(',')}`,
    endpoints,
    pid: (i) => {
      check(i);
      const p = procs[i];
      return p && !p.exited() ? p.pid : -1;
    },
    leaderIndex,
    waitForLeader,
    kill: async (i) => {
      check(i);
      if (paused.delete(i)) signalEach([procs[i]!.pid], 'SIGCONT');
      await procs[i]?.kill();
    },
    restart: async (i) => {
      check(i);
      if (paused.delete(i)) signalEach([procs[i]!.pid], 'SIGCONT');
      await procs[i]?.stop();
      procs[i] = launch(i);
      await waitUntilReady(procs[i]!, 'its /health', () => healthy(endpoints[i]!), 60_000);
    },
    pause: (i) => {
      check(i);
      const p = procs[i];
      if (!p || p.exited()) throw new Error(`etcd member ${i} is not running`);
      signalEach([p.pid], 'SIGSTOP');
      paused.add(i);
    },
    resume: (i) => {
      check(i);
      if (paused.delete(i)) signalEach([procs[i]!.pid], 'SIGCONT');
    },
    stop,
  };
}
