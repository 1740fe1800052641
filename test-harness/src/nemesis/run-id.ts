import { randomBytes } from 'node:crypto';

/**
 * Every namespace of a run is `hfnem-<pid>-<nonce>-<node>`: the pid says whether the run that made it
 * is still alive, so a later run can remove what a crashed one left behind.
 */
export const PREFIX = 'hfnem-';

export function newRunId(): string {
  return `${process.pid}-${randomBytes(3).toString('hex')}`;
}

export function namespaceName(runId: string, node: string): string {
  return `${PREFIX}${runId}-${node}`;
}

/** The pid of the run that created a namespace, or null if the name is not one of ours. */
export function ownerPid(namespace: string): number | null {
  const match = /^hfnem-(\d+)-[0-9a-f]{6}-/.exec(namespace);
  return match ? Number(match[1]) : null;
}

export function runIdOf(namespace: string): string | null {
  const match = /^hfnem-(\d+-[0-9a-f]{6})-/.exec(namespace);
  return match ? match[1]! : null;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
