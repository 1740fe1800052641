import { ip, listNamespaces, pidsIn } from './ip.js';
import { ownerPid, PREFIX, processAlive, runIdOf } from './run-id.js';

/**
 * Kills what runs inside a namespace, then deletes it. Deleting the bridge namespace deletes its veth
 * ends and with them their peers, so nothing of the run stays in any namespace.
 */
export function removeNamespace(namespace: string): void {
  for (const pid of pidsIn(namespace)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  try {
    ip(['netns', 'del', namespace]);
  } catch {
    // already gone
  }
}

/**
 * Removes the namespaces of runs whose process is dead (a crash, a SIGKILL: no exit handler ran).
 * Returns the names removed. `runId`, if given, removes that run's namespaces whatever its state.
 */
export function removeLeftovers(runId?: string): string[] {
  const removed: string[] = [];
  for (const namespace of listNamespaces()) {
    if (!namespace.startsWith(PREFIX)) continue;
    const owner = ownerPid(namespace);
    const ours = runId !== undefined && runIdOf(namespace) === runId;
    const orphan = owner !== null && owner !== process.pid && !processAlive(owner);
    if (ours || orphan) {
      removeNamespace(namespace);
      removed.push(namespace);
    }
  }
  return removed;
}
