import { join } from 'node:path';
import { consulBinary } from './binaries.js';
import { makeTempDir, removeTempDir } from './cleanup.js';
import { freePorts, retryOnPortClash } from './ports.js';
import { consulLeader } from './probes.js';
import { type ManagedProcess, spawnServer } from './process.js';
import { pollUntil, waitUntilReady } from './wait.js';

export interface ConsulCluster {
  httpUrls: string[];
  /** Index of the current Raft leader (asks the live members); rejects if there is none. */
  leaderIndex(): Promise<number>;
  /** SIGKILL member i: a crash, no graceful leave. */
  kill(i: number): Promise<void>;
  /** Start member i again with its ports and data dir; it rejoins the cluster. */
  restart(i: number): Promise<void>;
  /** Waits until the live members agree on a leader that is itself live; returns its index. */
  waitForLeader(timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

interface MemberPorts {
  http: number;
  server: number;
  serfLan: number;
  serfWan: number;
}

async function requireConsul(): Promise<string> {
  const bin = await consulBinary();
  if (!bin) throw new Error('consul not found (cache or PATH); run `npm run servers:install`');
  return bin;
}

function portArgs(p: MemberPorts): string[] {
  return [
    '-bind=127.0.0.1',
    '-client=127.0.0.1',
    `-http-port=${p.http}`,
    `-server-port=${p.server}`,
    `-serf-lan-port=${p.serfLan}`,
    `-serf-wan-port=${p.serfWan}`,
    '-dns-port=-1',
    '-grpc-port=-1',
    '-grpc-tls-port=-1',
    '-https-port=-1',
  ];
}

async function allocate(n: number): Promise<MemberPorts[]> {
  const ports = await freePorts(4 * n);
  return Array.from({ length: n }, (_, i) => ({
    http: ports[4 * i]!,
    server: ports[4 * i + 1]!,
    serfLan: ports[4 * i + 2]!,
    serfWan: ports[4 * i + 3]!,
  }));
}

/**
 * Whether `node` is in the catalog as `httpUrl` sees it. Until it is, that agent refuses sessions
 * ("Missing node registration") although a leader may already be elected.
 */
async function nodeRegistered(httpUrl: string, node: string): Promise<boolean> {
  const res = await fetch(`${httpUrl}/v1/catalog/node/${encodeURIComponent(node)}`, { signal: AbortSignal.timeout(2000) });
  if (!res.ok) throw new Error(`GET /v1/catalog/node/${node}: HTTP ${res.status}`);
  const body = (await res.json()) as { Node?: unknown } | null;
  return body !== null && body.Node != null;
}

/** Really ready: a leader is elected and the agent's own node is registered (so sessions work). */
async function agentReady(httpUrl: string, node: string): Promise<boolean> {
  return (await consulLeader(httpUrl)) !== '' && (await nodeRegistered(httpUrl, node));
}

/** `consul agent -dev` on free loopback ports; ready once it is leader and its node is registered. */
export function startConsulDev(): Promise<{ url: string; httpUrl: string; stop(): Promise<void> }> {
  return retryOnPortClash(startDevOnce);
}

const DEV_NODE = 'holdfast-dev';
const memberNode = (i: number): string => `holdfast-${i}`;

async function startDevOnce(): Promise<{ url: string; httpUrl: string; stop(): Promise<void> }> {
  const bin = await requireConsul();
  const [ports] = await allocate(1);
  const httpUrl = `http://127.0.0.1:${ports!.http}`;
  const proc = spawnServer(`consul-dev:${ports!.http}`, bin, [
    'agent',
    '-dev',
    '-log-level=warn',
    `-node=${DEV_NODE}`,
    ...portArgs(ports!),
  ]);
  try {
    await waitUntilReady(proc, 'a Raft leader and its node registered', () => agentReady(httpUrl, DEV_NODE), 60_000);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return { url: `consul://127.0.0.1:${ports!.http}`, httpUrl, stop: () => proc.stop() };
}

/** n Consul servers (-bootstrap-expect=n) on one host, each with its own ports and data dir. */
export function startConsulCluster(n = 3): Promise<ConsulCluster> {
  return retryOnPortClash(() => startClusterOnce(n));
}

async function startClusterOnce(n: number): Promise<ConsulCluster> {
  const bin = await requireConsul();
  const members = await allocate(n);
  const root = makeTempDir('consul-cluster');
  const procs: (ManagedProcess | undefined)[] = new Array(n).fill(undefined);
  const httpUrls = members.map((p) => `http://127.0.0.1:${p.http}`);

  const launch = (i: number): ManagedProcess => {
    const p = members[i]!;
    const joins = members.filter((_, j) => j !== i).map((q) => `-retry-join=127.0.0.1:${q.serfLan}`);
    return spawnServer(`consul-${i}:${p.http}`, bin, [
      'agent',
      '-server',
      `-bootstrap-expect=${n}`,
      `-node=${memberNode(i)}`,
      `-data-dir=${join(root, String(i))}`,
      '-log-level=warn',
      '-retry-interval=1s',
      // Loopback is fast: the tightest Raft timings make re-election after a crash take ~1-3 s.
      '-hcl=performance { raft_multiplier = 1 }',
      ...portArgs(p),
      ...joins,
    ]);
  };

  const live = (): number[] => procs.flatMap((p, i) => (p && !p.exited() ? [i] : []));
  const indexOfServerAddr = (addr: string): number => members.findIndex((p) => addr === `127.0.0.1:${p.server}`);

  const leaderIndex = async (): Promise<number> => {
    for (const i of live()) {
      try {
        const addr = await consulLeader(httpUrls[i]!);
        const idx = indexOfServerAddr(addr);
        if (idx >= 0 && live().includes(idx)) return idx;
      } catch {
        // try the next member
      }
    }
    throw new Error('no live Consul member reports a live leader');
  };

  const waitForLeader = async (timeoutMs = 60_000): Promise<number> => {
    let leader = -1;
    await pollUntil(
      'a Consul leader agreed on by all live members',
      async () => {
        const views = await Promise.all(live().map((i) => consulLeader(httpUrls[i]!)));
        const first = views[0];
        if (!first || views.some((v) => v !== first)) return false;
        leader = indexOfServerAddr(first);
        return leader >= 0 && live().includes(leader);
      },
      timeoutMs,
    );
    return leader;
  };

  const stop = async (): Promise<void> => {
    await Promise.all(procs.map((p) => p?.stop()));
    removeTempDir(root);
  };

  try {
    for (let i = 0; i < n; i++) procs[i] = launch(i);
    for (let i = 0; i < n; i++) {
      await waitUntilReady(procs[i]!, 'its HTTP API', async () => (await fetch(`${httpUrls[i]}/v1/agent/self`)).ok, 60_000);
    }
    await waitForLeader();
    // Each agent refuses sessions until its node is registered, which follows the election.
    for (let i = 0; i < n; i++) {
      await waitUntilReady(procs[i]!, 'its node registered', () => nodeRegistered(httpUrls[i]!, memberNode(i)), 60_000);
    }
  } catch (err) {
    const tails = procs.map((p) => (p ? `--- ${p.name}\n${p.outputTail(15)}` : '')).join('\n');
    await stop();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${tails}`);
  }

  const check = (i: number): void => {
    if (i < 0 || i >= n) throw new RangeError(`no Consul member ${i}`);
  };
  return {
    httpUrls,
    leaderIndex,
    kill: async (i) => {
      check(i);
      await procs[i]?.kill();
    },
    restart: async (i) => {
      check(i);
      await procs[i]?.stop();
      procs[i] = launch(i);
      await waitUntilReady(procs[i]!, 'its HTTP API', async () => (await fetch(`${httpUrls[i]}/v1/agent/self`)).ok, 60_000);
    },
    waitForLeader,
    stop,
  };
}
