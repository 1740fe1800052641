import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { ip, ipCommand, namespaceSupportProblem } from './ip.js';
import { removeLeftovers, removeNamespace } from './leftovers.js';
import { namespaceName, newRunId } from './run-id.js';

/** The hosts' subnet, inside the run's own namespaces only: no route to it exists in the root namespace. */
const SUBNET = '10.213.1';
const MAIN = 'br0';
const SIDE = 'br1';

/**
 * A private network for one nemesis run: a bridge namespace with two bridges, and one namespace per
 * host, joined by a veth pair created directly across the two namespaces (nothing ever appears in the
 * root namespace). Faults move a host's bridge-side veth: detached from every bridge it is isolated
 * (packets leave and are silently lost, as with an iptables DROP), on the side bridge it is in the
 * minority of a split, back on the main bridge it is healed.
 */
export class NetworkRig {
  private readonly hosts = new Map<string, { namespace: string; address: string; port: string }>();
  private destroyed = false;
  private readonly onExit = (): void => this.destroy();

  private constructor(
    readonly runId: string,
    private readonly bridgeNamespace: string,
  ) {}

  /** Builds the network; throws with the reason when namespaces cannot be created here. */
  static create(hostNames: readonly string[]): NetworkRig {
    const problem = namespaceSupportProblem();
    if (problem) throw new Error(`nemesis: ${problem}`);
    if (hostNames.length === 0 || hostNames.length > 200) throw new RangeError('a network needs 1 to 200 hosts');
    if (new Set(hostNames).size !== hostNames.length) throw new RangeError('host names must be distinct');
    for (const name of hostNames) if (!/^[a-z][a-z0-9]{0,9}$/.test(name)) throw new RangeError(`bad host name ${name}`);
    removeLeftovers();
    const runId = newRunId();
    const rig = new NetworkRig(runId, namespaceName(runId, 'bridge'));
    process.once('exit', rig.onExit);
    try {
      rig.build(hostNames);
    } catch (error) {
      rig.destroy();
      throw error;
    }
    return rig;
  }

  private build(hostNames: readonly string[]): void {
    ip(['netns', 'add', this.bridgeNamespace]);
    for (const bridge of [MAIN, SIDE]) {
      ip(['-n', this.bridgeNamespace, 'link', 'add', bridge, 'type', 'bridge']);
      ip(['-n', this.bridgeNamespace, 'link', 'set', bridge, 'up']);
    }
    hostNames.forEach((name, i) => {
      const namespace = namespaceName(this.runId, name);
      const port = `v${i}`;
      const address = `${SUBNET}.${i + 1}`;
      this.hosts.set(name, { namespace, address, port });
      ip(['netns', 'add', namespace]);
      ip(['link', 'add', 'eth0', 'netns', namespace, 'type', 'veth', 'peer', 'name', port, 'netns', this.bridgeNamespace]);
      ip(['-n', namespace, 'link', 'set', 'lo', 'up']);
      ip(['-n', namespace, 'addr', 'add', `${address}/24`, 'dev', 'eth0']);
      ip(['-n', namespace, 'link', 'set', 'eth0', 'up']);
      ip(['-n', this.bridgeNamespace, 'link', 'set', port, 'master', MAIN]);
      ip(['-n', this.bridgeNamespace, 'link', 'set', port, 'up']);
    });
  }

  get hostNames(): string[] {
    return [...this.hosts.keys()];
  }

  namespaceOf(host: string): string {
    return this.host(host).namespace;
  }

  addressOf(host: string): string {
    return this.host(host).address;
  }

  /** The command line that runs `command args` inside the host's namespace (for spawnServer and the like). */
  commandIn(host: string, command: string, args: readonly string[]): [string, string[]] {
    return [ipCommand, ['netns', 'exec', this.namespaceOf(host), command, ...args]];
  }

  /** Spawns a process inside the host's namespace; `ip netns exec` execs it, so the pid is the process's own. */
  spawnIn(host: string, command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    const [cmd, argv] = this.commandIn(host, command, args);
    return spawn(cmd, argv, options);
  }

  /** Cuts the host off from every other host (a server isolated, or a client cut off from every server). */
  isolate(host: string): void {
    ip(['-n', this.bridgeNamespace, 'link', 'set', this.host(host).port, 'nomaster']);
  }

  /** Splits the network in two: `minority` on one side, every other host on the other. */
  split(minority: readonly string[]): void {
    this.heal();
    for (const host of minority) ip(['-n', this.bridgeNamespace, 'link', 'set', this.host(host).port, 'master', SIDE]);
  }

  /** Every host back on one bridge. */
  heal(): void {
    for (const { port } of this.hosts.values()) ip(['-n', this.bridgeNamespace, 'link', 'set', port, 'master', MAIN]);
  }

  /** Kills every process inside the run's namespaces and deletes them. Idempotent; also runs at exit. */
  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    process.off('exit', this.onExit);
    for (const { namespace } of this.hosts.values()) removeNamespace(namespace);
    removeNamespace(this.bridgeNamespace);
    removeLeftovers(this.runId);
  }

  private host(name: string): { namespace: string; address: string; port: string } {
    const host = this.hosts.get(name);
    if (!host) throw new RangeError(`no host ${name} in this network`);
    return host;
  }
}
