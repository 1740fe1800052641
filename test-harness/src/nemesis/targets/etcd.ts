import { join } from 'node:path';
import { etcdBinary } from '../../servers/binaries.js';
import { makeTempDir, removeTempDir } from '../../servers/cleanup.js';
import { type ManagedProcess, spawnServer } from '../../servers/process.js';
import type { NetworkRig } from '../network.js';
import type { NemesisTarget } from '../types.js';
import { runIn } from './in-namespace.js';
import { ServerProcesses } from './server-processes.js';

/** etcd's own ports: each member has a namespace of its own, so nothing else listens there. */
const CLIENT = 2379;
const PEER = 2380;
const MEMBERS = ['s0', 's1', 's2'];
/** A member (re)started on a loaded machine: the JVM-free Go binary is quick, the election is not always. */
const START_BOUND_MS = 90_000;

/**
 * Three etcd members, each in its own namespace on its 10.213 address. Worker w names every member,
 * s(w mod 3) first: the client talks to the first that answers, so a split leaves holders on both
 * sides (the workers of the minority member can reach only it). The runner probes the members with
 * curl from inside their namespaces (etcd's JSON gateway): the root namespace never sends to the rig.
 */
export function etcdTarget(): NemesisTarget {
  let dir: string | undefined;
  let rig: NetworkRig | undefined;
  let bin = '';
  const servers = new ServerProcesses();
  const address = (i: number): string => rig!.addressOf(MEMBERS[i]!);

  /** curl from inside the member's namespace: a POST with `{}` (the gateway's RPCs), or a GET (/health). */
  const ask = async (i: number, path: string, post = true): Promise<string | null> => {
    const url = `http://${address(i)}:${CLIENT}${path}`;
    const args = post ? ['-X', 'POST', '-d', '{}', url] : [url];
    const { code, stdout } = await runIn(rig!, MEMBERS[i]!, '/usr/bin/curl', ['-sf', '-m', '2', ...args]);
    return code === 0 ? stdout : null;
  };
  const status = async (i: number): Promise<{ id: string; leader: string } | null> => {
    const body = await ask(i, '/v3/maintenance/status');
    if (!body) return null;
    const parsed = JSON.parse(body) as { header?: { member_id?: string }; leader?: string };
    return { id: parsed.header?.member_id ?? '', leader: parsed.leader ?? '0' };
  };
  /** The host that a majority of members names as leader, when it answers too (and names itself). */
  const agreedLeader = async (): Promise<string | null> => {
    const views = await Promise.all(MEMBERS.map((_, i) => status(i)));
    const index = views.findIndex((view) => view !== null && view.id === view.leader);
    if (index < 0) return null;
    const named = views.filter((view) => view?.leader === views[index]!.id).length;
    return named * 2 > MEMBERS.length ? MEMBERS[index]! : null;
  };

  const launch = (i: number): ManagedProcess => {
    const host = MEMBERS[i]!;
    const peers = MEMBERS.map((other, j) => `${other}=http://${address(j)}:${PEER}`).join(',');
    const [cmd, argv] = rig!.commandIn(host, bin, [
      `--name=${host}`,
      `--data-dir=${join(dir!, host)}`,
      `--listen-client-urls=http://${address(i)}:${CLIENT}`,
      `--advertise-client-urls=http://${address(i)}:${CLIENT}`,
      `--listen-peer-urls=http://${address(i)}:${PEER}`,
      `--initial-advertise-peer-urls=http://${address(i)}:${PEER}`,
      `--initial-cluster=${peers}`,
      // Ignored once the data dir exists: a restarted member rejoins with what it stored.
      '--initial-cluster-state=new',
      '--initial-cluster-token=holdfast-nemesis',
      '--heartbeat-interval=100',
      '--election-timeout=1000',
      '--log-level=warn',
    ]);
    return spawnServer(`nemesis-etcd-${i}`, cmd, argv);
  };
  const serving = (what: string): Promise<void> =>
    servers.waitUntil(
      what,
      async () => {
        const health = await Promise.all(MEMBERS.map((_, i) => ask(i, '/health', false)));
        return health.every((body) => body?.includes('"health":"true"')) && (await agreedLeader()) !== null;
      },
      START_BOUND_MS,
    );

  return {
    backend: 'etcd',
    serverHosts: MEMBERS,
    async start(network) {
      rig = network;
      const found = await etcdBinary();
      if (!found) throw new Error('etcd not found; run `npm run servers:install`');
      bin = found;
      dir = makeTempDir('nemesis-etcd');
      for (let i = 0; i < MEMBERS.length; i++) servers.add(launch(i));
      await serving('three etcd members healthy and agreeing on a leader');
    },
    urlFor: (worker) => {
      const first = worker % MEMBERS.length;
      const order = MEMBERS.map((_, j) => (first + j) % MEMBERS.length);
      return `etcd://${order.map((i) => `${address(i)}:${CLIENT}`).join(',')}/holdfast-nemesis`;
    },
    async leader() {
      const leader = await agreedLeader();
      if (!leader) throw new Error('the etcd members do not agree on a leader');
      return leader;
    },
    async restart(host) {
      const i = MEMBERS.indexOf(host);
      if (i < 0) throw new RangeError(`no etcd member in ${host}`);
      await servers.replace(i, () => launch(i));
      await serving(`${host} restarted, three members healthy and agreeing on a leader`);
    },
    async stop() {
      await servers.stopAll();
      if (dir) removeTempDir(dir);
    },
  };
}
