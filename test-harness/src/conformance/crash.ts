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

  test.concurrent('58. a leader whose process is killed with SIGKILL is replaced within TTL (+ backend delay), with a higher token', async (t) => {
    const c = cases(t);
    if (!c.capabilities.crossProcess) return skipBecause(t, `${c.target.name} is not shared between processes`);
    if (!c.target.child) return skipBecause(t, `${c.target.name} gives no way to build a provider in a child process`);
    const key = c.key('leader');
    const ttlMs = c.timing.shortTtlMs;
    const child = spawn(process.execPath, [childScript('child-leader.js'), JSON.stringify({ ...c.target.child, key, ttlMs })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout! });
      const [line] = (await c.within(
        'a child process becomes leader',
        Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['child exited'])]),
        CHILD_START_MS,
      )) as [string];
      expect(line, 'the child did not report leading').toMatch(/^LEADING \d+$/);
      const candidate = await c.provider();
      let ledAt = 0;
      let token = 0n;
      const election = candidate.elect(key, async (leadership) => {
        ledAt = Date.now();
        token = leadership.token;
        await new Promise((resolve) => leadership.signal.addEventListener('abort', resolve, { once: true }));
      }, { ttlMs });
      try {
        expect(election.leading, 'a second instance leads while the first one lives').toBe(false);
        child.kill('SIGKILL');
        await c.within('the killed child exits', once(child, 'exit'));
        const killedAt = Date.now();
        const bound = ttlMs + c.timing.graceMs + c.timing.slackMs + c.timing.promptWakeMs;
        await c.until('another candidate leads after the leader was killed', () => ledAt > 0, bound + c.timing.slackMs);
        expect(ledAt - killedAt, 'the new leader took over late').toBeLessThan(bound);
        expect(token, 'the new leader\'s token is not above the killed leader\'s').toBeGreaterThan(BigInt(line.slice('LEADING '.length)));
      } finally {
        await c.within('resign() returns', election.resign());
      }
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
}
