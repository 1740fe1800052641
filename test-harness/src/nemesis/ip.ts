import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where iproute2's `ip` lives on Debian; PATH is the fallback for other layouts. */
const IP = existsSync('/usr/sbin/ip') ? '/usr/sbin/ip' : existsSync('/sbin/ip') ? '/sbin/ip' : 'ip';

export const ipCommand = IP;

/** Runs `ip ...args` to the end; throws with its stderr, so a failed step names its reason. */
export function ip(args: readonly string[]): string {
  try {
    return execFileSync(IP, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${IP} ${args.join(' ')} failed: ${stderr || (error as Error).message}`);
  }
}

/** Every network namespace by name (`ip netns list` prints `name (id: n)` once it has an id). */
export function listNamespaces(): string[] {
  return ip(['netns', 'list'])
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

/** The pids of the processes inside a namespace. */
export function pidsIn(namespace: string): number[] {
  try {
    return ip(['netns', 'pids', namespace]).split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * Why network namespaces cannot be made here, or null when they can: a nemesis run fails with this
 * reason rather than skipping, since a partition test that silently does nothing proves nothing.
 */
export function namespaceSupportProblem(): string | null {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root (ip netns add); run as root or in a privileged container';
  try {
    execFileSync(IP, ['-V'], { stdio: 'ignore' });
  } catch {
    return `iproute2 not found (${IP}); install it (Debian: apt-get install iproute2)`;
  }
  const probe = `hfnem-probe-${process.pid}`;
  try {
    ip(['netns', 'add', probe]);
    ip(['-n', probe, 'link', 'add', 'br0', 'type', 'bridge']);
  } catch (error) {
    return `cannot create a network namespace with a bridge: ${(error as Error).message}`;
  } finally {
    try {
      ip(['netns', 'del', probe]);
    } catch {
      // it was never created
    }
  }
  return null;
}
