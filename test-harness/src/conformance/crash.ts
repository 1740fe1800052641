import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { expect, test } from 'vitest';
import { childScript } from '../faults/child-script.js';
import type { CaseFactory } from './suite-types.js';
import { elapsed } from '../helpers/index.js';
import { skipBecause } from './support.js';

/** A child process starts Node, imports the adapter and connects: generous, but bounded. */
const CHILD_START_MS = 20_000;

export function crashCases(cases: CaseFactory): void {
  test.concurrent('23. a holder process killed with SIGKILL frees its lock within TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (!c.capabilities.crossProcess) return skipBecause(t, `${c.target.name} is not shared between processes`);
    if (!c.target.child) return skipBecause(t, `${c.target.name} gives no way to build a provider in a child process`);
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const child = spawn(process.execPath, [childScript('child-holder.js'), JSON.stringify({ ...c.target.child, key, ttlMs })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout! });
      const [line] = (await c.within(
        'a child process takes the lock',
        Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['child exited'])]),
        CHILD_START_MS,
      )) as [string];
      expect(line, 'the child did not report holding the lock').toMatch(/^HELD \d+$/);
      const observer = await c.provider();
      expect(await c.within('tryAcquire answers', observer.tryAcquire(key)), 'a lock held by another process was granted').toBeNull();
      child.kill('SIGKILL');
      await c.within('the killed child exits', once(child, 'exit'));
      const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
      const waitMs = bound + c.timing.slackMs * 2;
      const taken = await c.within('the lock of a killed holder is freed', elapsed(() => observer.acquire(key, { waitMs })), waitMs + c.timing.slackMs);
      expect(taken.ms, 'the lock of a killed holder was freed late').toBeLessThan(bound + c.timing.promptWakeMs);
      expect(taken.value.token, 'the token after a crash is not above the crashed holder\'s').toBeGreaterThan(BigInt(line.slice('HELD '.length)));
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
}
