import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { expect, test } from 'vitest';
import type { CaseFactory } from './suite-types.js';
import { elapsed, skipBecause } from './support.js';

const CHILD_SCRIPT = fileURLToPath(new URL('../child-holder.js', import.meta.url));

export function crashCases(cases: CaseFactory): void {
  test.concurrent('23. a holder process killed with SIGKILL frees its lock within TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (!c.capabilities.crossProcess) return skipBecause(t, `${c.target.name} is not shared between processes`);
    if (!c.target.child) return skipBecause(t, `${c.target.name} gives no way to build a provider in a child process`);
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const child = spawn(process.execPath, [CHILD_SCRIPT, JSON.stringify({ ...c.target.child, key, ttlMs })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout! });
      const [line] = (await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['child exited'])])) as [string];
      expect(line).toMatch(/^HELD \d+$/);
      const observer = await c.provider();
      expect(await observer.tryAcquire(key)).toBeNull();
      child.kill('SIGKILL');
      await once(child, 'exit');
      const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
      const taken = await elapsed(() => observer.acquire(key, { waitMs: bound + c.timing.slackMs * 2 }));
      expect(taken.ms).toBeLessThan(bound + c.timing.promptWakeMs);
      expect(taken.value.token).toBeGreaterThan(BigInt(line.slice('HELD '.length)));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
}
