import { readdirSync, readFileSync } from 'node:fs';

/** The parent pid from /proc/<pid>/stat (the field after the parenthesised command name), or null. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/** `pid` and its direct children (PostgreSQL's postmaster and its backends), read from /proc. */
export function withChildren(pid: number): number[] {
  const children = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((p) => parentOf(p) === pid);
  return [pid, ...children];
}

/** Sends `signal` to each pid that still exists. */
export function signalEach(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}
