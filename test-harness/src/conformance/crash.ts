import { type ChildProcess, spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { CHANNELS, ErrorCode, type Lock, type LockEvent, type LockProvider, type Semaphore } from '@holdfast/core';
import { expect, type TestContext, test } from 'vitest';
import type { ChildSpec } from '../child-provider.js';
import { childScript } from '../faults/child-script.js';
import { codeOf, elapsed } from '../helpers/index.js';
import { readWriteOf } from './read-write.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, skipBecause } from './support.js';

/** A child process starts Node, imports the adapter and connects: generous, but bounded. */
const CHILD_START_MS = 20_000;

/** Skips the case (printing why) unless the target's lock is shared between processes and it can build one in a child. */
function skippedWithoutChild(c: CaseContext, t: TestContext): boolean {
  const reason = !c.capabilities.crossProcess
    ? `${c.target.name} is not shared between processes`
    : !c.target.child
      ? `${c.target.name} gives no way to build a provider in a child process`
      : undefined;
  if (reason !== undefined) skipBecause(t, reason);
  return reason !== undefined;
}

/** Starts `script` in a child process on `key` and resolves with the first line it prints (what it did). */
async function startChild(
  c: CaseContext,
  script: string,
  key: string,
  ttlMs: number,
  what: string,
  grant: Pick<ChildSpec, 'limit' | 'mode'> = {},
): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, [childScript(script), JSON.stringify({ ...c.target.child, key, ttlMs, ...grant })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const lines = createInterface({ input: child.stdout! });
    const [line] = (await c.within(
      what,
      Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['child exited'])]),
      CHILD_START_MS,
    )) as [string];
    return { child, line };
  } catch (error) {
    killIfRunning(child);
    throw error;
  }
}

function killIfRunning(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Resolves when core reports that `owner` has begun waiting for `key`. */
function waitStarted(owner: string, key: string): Promise<void> {
  return new Promise((resolve) => {
    const onWait = (message: unknown) => {
      const event = message as LockEvent;
      if (event.owner !== owner || event.key !== key) return;
      unsubscribe(CHANNELS.wait, onWait);
      resolve();
    };
    subscribe(CHANNELS.wait, onWait);
  });
}

/**
 * Cases 64 and 97, after `held` took the key and a child process (`dead`) began to wait for it: the
 * next waiter (`wait`, from a provider of this process) waits behind the child, the child is
 * SIGKILLed and `held` released; the next waiter must be granted within TTL + grace + slack of the
 * release, with a higher token. Resolves with its lock; the child never outlives the case.
 */
async function nextAfterDeadWaiter(
  c: CaseContext,
  key: string,
  ttlMs: number,
  held: Lock,
  dead: { child: ChildProcess; line: string },
  wait: (next: LockProvider, waitMs: number) => Promise<Lock>,
  says: { readonly next: string; readonly heldUp: string; readonly token: string },
): Promise<Lock> {
  const { child, line } = dead;
  try {
    expect(line, 'the child did not report waiting').toBe('WAITING');
    const next = await c.provider();
    const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
    const waitMs = bound + c.timing.slackMs * 2;
    const nextWaits = waitStarted(next.owner, key);
    const granted = wait(next, waitMs).then((lock) => ({ lock, at: Date.now() }));
    granted.catch(() => undefined);
    await c.within(`${says.next} waits`, nextWaits);
    child.kill('SIGKILL');
    await c.within('the killed child exits', once(child, 'exit'));
    const releasedAt = Date.now();
    await c.within('release answers', held.release());
    const taken = await c.within(`${says.next} is granted`, granted, waitMs + c.timing.slackMs);
    expect(taken.at - releasedAt, says.heldUp).toBeLessThan(bound + c.timing.promptWakeMs);
    expect(taken.lock.token, says.token).toBeGreaterThan(held.token);
    return taken.lock;
  } finally {
    killIfRunning(child);
  }
}

export function crashCases(cases: CaseFactory): void {
  test.concurrent('23. a holder process killed with SIGKILL frees its lock within TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (skippedWithoutChild(c, t)) return;
    const key = c.key();
    const ttlMs = c.timing.shortTtlMs;
    const { child, line } = await startChild(c, 'child-holder.js', key, ttlMs, 'a child process takes the lock');
    try {
      expect(line, 'the child did not report holding the lock').toMatch(/^HELD \d+$/);
      const observer = await c.provider();
      expect(await c.within('tryAcquire answers', observer.tryAcquire(key)), 'a lock held by another process was granted').toBeNull();
      child.kill('SIGKILL');
      await c.within('the killed child exits', once(child, 'exit'));
      const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
      const waitMs = bound + c.timing.slackMs * 2;
      const taken = await c.within(
        'the lock of a killed holder is freed',
        elapsed(() => observer.acquire(key, { waitMs })),
        waitMs + c.timing.slackMs,
      );
      expect(taken.ms, 'the lock of a killed holder was freed late').toBeLessThan(bound + c.timing.promptWakeMs);
      expect(taken.value.token, "the token after a crash is not above the crashed holder's").toBeGreaterThan(
        BigInt(line.slice('HELD '.length)),
      );
    } finally {
      killIfRunning(child);
    }
  });

  test.concurrent('63. a semaphore holder process killed with SIGKILL frees its slot within TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (skippedWithoutChild(c, t)) return;
    const key = c.key('slot');
    const observer = await c.provider();
    let semaphore: Semaphore;
    try {
      semaphore = observer.semaphore(key, 1);
    } catch (error) {
      if (codeOf(error) !== ErrorCode.Unsupported) throw error;
      return skipBecause(t, `${c.target.name} has no semaphores`);
    }
    const ttlMs = c.timing.shortTtlMs;
    const { child, line } = await startChild(c, 'child-holder.js', key, ttlMs, 'a child process takes a slot', { limit: 1 });
    try {
      expect(line, 'the child did not report holding a slot').toMatch(/^HELD \d+$/);
      expect(await c.within('tryAcquire answers', semaphore.tryAcquire()), 'a slot held by another process was granted').toBeNull();
      child.kill('SIGKILL');
      await c.within('the killed child exits', once(child, 'exit'));
      const bound = ttlMs + c.timing.graceMs + c.timing.slackMs;
      const waitMs = bound + c.timing.slackMs * 2;
      const taken = await c.within(
        'the slot of a killed holder is freed',
        elapsed(() => semaphore.acquire({ waitMs })),
        waitMs + c.timing.slackMs,
      );
      expect(taken.ms, 'the slot of a killed holder was freed late').toBeLessThan(bound + c.timing.promptWakeMs);
      expect(taken.value.token, "the token after a crash is not above the crashed holder's").toBeGreaterThan(
        BigInt(line.slice('HELD '.length)),
      );
    } finally {
      killIfRunning(child);
    }
  });

  test.concurrent('64. a waiter whose process is killed with SIGKILL while it waits delays the next waiter by at most TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (skippedWithoutChild(c, t)) return;
    const key = c.key('waiter');
    const ttlMs = c.timing.shortTtlMs;
    const holding = await c.provider();
    const held = await c.within('tryAcquire answers', holding.tryAcquire(key, { ttlMs: 60_000 }));
    expect(held, 'a free key was refused').not.toBeNull();
    // A queued backend gives the child's place to nobody while it lives: it waits ahead of the next waiter.
    const dead = await startChild(c, 'child-waiter.js', key, ttlMs, 'a child process waits for the lock');
    await nextAfterDeadWaiter(c, key, ttlMs, held!, dead, (next, waitMs) => next.acquire(key, { waitMs }), {
      next: 'the next waiter',
      heldUp: 'the killed waiter held up the next one',
      token: "the next waiter's token is not above the released holder's",
    });
  });

  test.concurrent('97. a writer waiting in a process killed with SIGKILL delays the readers behind it by at most TTL (+ backend delay)', async (t) => {
    const c = cases(t);
    if (skippedWithoutChild(c, t)) return;
    const key = c.key('writer');
    const ttlMs = c.timing.shortTtlMs;
    const holding = await c.provider();
    const readWrite = readWriteOf(t, c, holding, key);
    if (!readWrite) return;
    const held = await c.within('tryWrite answers', readWrite.tryWrite({ ttlMs: 60_000 }));
    expect(held, 'a free key was refused to a writer').not.toBeNull();
    // Where writers are preferred, the child's place keeps every later reader out while the child lives.
    const dead = await startChild(c, 'child-waiter.js', key, ttlMs, 'a child process waits to write', { mode: 'exclusive' });
    const taken = await nextAfterDeadWaiter(c, key, ttlMs, held!, dead, (next, waitMs) => next.readWrite(key).read({ waitMs }), {
      next: 'the reader',
      heldUp: 'the killed writer held up the reader behind it',
      token: "the reader's token is not above the released writer's",
    });
    await c.within('the reader releases', taken.release());
  });

  test.concurrent('58. a leader whose process is killed with SIGKILL is replaced within TTL (+ backend delay), with a higher token', async (t) => {
    const c = cases(t);
    if (skippedWithoutChild(c, t)) return;
    const key = c.key('leader');
    const ttlMs = c.timing.shortTtlMs;
    const { child, line } = await startChild(c, 'child-leader.js', key, ttlMs, 'a child process becomes leader');
    try {
      expect(line, 'the child did not report leading').toMatch(/^LEADING \d+$/);
      const candidate = await c.provider();
      let ledAt = 0;
      let token = 0n;
      const election = candidate.elect(
        key,
        async (leadership) => {
          ledAt = Date.now();
          token = leadership.token;
          await new Promise((resolve) => leadership.signal.addEventListener('abort', resolve, { once: true }));
        },
        { ttlMs },
      );
      try {
        expect(election.leading, 'a second instance leads while the first one lives').toBe(false);
        child.kill('SIGKILL');
        await c.within('the killed child exits', once(child, 'exit'));
        const killedAt = Date.now();
        const bound = ttlMs + c.timing.graceMs + c.timing.slackMs + c.timing.promptWakeMs;
        await c.until('another candidate leads after the leader was killed', () => ledAt > 0, bound + c.timing.slackMs);
        expect(ledAt - killedAt, 'the new leader took over late').toBeLessThan(bound);
        expect(token, "the new leader's token is not above the killed leader's").toBeGreaterThan(BigInt(line.slice('LEADING '.length)));
      } finally {
        await c.within('resign() returns', election.resign());
      }
    } finally {
      killIfRunning(child);
    }
  });
}
