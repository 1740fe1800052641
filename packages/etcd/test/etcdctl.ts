import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { until } from '@holdfast/test-harness/helpers';

/** `etcdctl lock <name>`: etcd's own Mutex, holding until SIGTERM; prints its key once it holds. */
export interface EtcdctlLock {
  readonly child: ChildProcess;
  /** What it printed, line by line (its key first, once it holds the lock). */
  readonly lines: string[];
}

export function etcdctlLock(binary: string, endpoint: string, name: string, children: ChildProcess[]): EtcdctlLock {
  const child = spawn(binary, [`--endpoints=${endpoint}`, 'lock', '--ttl=5', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const lines: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter(Boolean)));
  return { child, lines };
}

/** The key `etcdctl lock` printed on taking the lock, within `withinMs`, or null if it printed none. */
export async function heldKey(lock: EtcdctlLock, name: string, withinMs: number): Promise<string | null> {
  const line = (): string | undefined => lock.lines.find((l) => l.startsWith(`${name}/`));
  try {
    await until(() => line() !== undefined, withinMs, `etcdctl prints its key under ${name}/`, { everyMs: 20 });
  } catch {
    return null;
  }
  return line()!;
}

/** SIGTERM (etcdctl unlocks on it) and waits for the exit; SIGKILL after 5 s. */
export async function stop(lock: EtcdctlLock): Promise<number | null> {
  if (lock.child.exitCode !== null) return lock.child.exitCode;
  const exited = once(lock.child, 'exit');
  lock.child.kill('SIGTERM');
  const timer = setTimeout(() => lock.child.kill('SIGKILL'), 5000);
  const [code] = (await exited) as [number | null];
  clearTimeout(timer);
  return code;
}

export async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }),
  );
}
