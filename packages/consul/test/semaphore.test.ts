import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { ErrorCode } from '@holdfast/core';
import { consulBinary } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { printed } from './child-output.js';
import { ConsulSemaphore } from '../src/index.js';

const consul = await useBackend('consul');
const binary = await consulBinary();

describe.skipIf(!consul.url || !binary)('semaphore: Consul\'s protocol, interoperating with `consul lock -n N`', () => {
  const http = consul.url?.replace('consul://', 'http://') ?? '';
  const semaphores: ConsulSemaphore[] = [];
  const children: ChildProcess[] = [];
  const semaphore = (prefix: string, limit: number): ConsulSemaphore => {
    const created = new ConsulSemaphore({ url: http, prefix, limit, sessionTtlMs: 10_000 });
    semaphores.push(created);
    return created;
  };
  const consulLock = (prefix: string, n: number, command: string, extra: string[] = []): { child: ChildProcess; lines: string[] } => {
    const child = spawn(binary!, ['lock', `-http-addr=${http.replace('http://', '')}`, `-n=${n}`, ...extra, prefix, command], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    const lines: string[] = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(line));
    return { child, lines };
  };
  afterEach(async () => {
    for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(semaphores.splice(0).map((s) => s.close()));
  });

  test('limit 2 is shared with `consul lock -n 2`, both ways; a different limit is a conflict', async () => {
    const prefix = `holdfast-sem/${randomBytes(4).toString('hex')}`;
    const sem = semaphore(prefix, 2);
    const a = await sem.tryAcquire();
    const b = await sem.tryAcquire();
    expect(a).not.toBeNull();
    expect(b).not.toBeNull();
    expect(await sem.tryAcquire()).toBeNull();
    expect((await sem.acquire({ waitMs: 300 }).catch((e: unknown) => e)) as { code?: string }).toMatchObject({ code: ErrorCode.Timeout });

    const tryOnce = consulLock(prefix, 2, 'echo HELD', ['-timeout=1s']);
    const [code] = (await once(tryOnce.child, 'exit')) as [number | null];
    expect(code).not.toBe(0);
    expect(tryOnce.lines).not.toContain('HELD');

    const go = consulLock(prefix, 2, 'echo HELD; sleep 30');
    expect(await printed(go.lines, 'HELD', 2000)).toBe(false);
    await a!.release();
    expect(await printed(go.lines, 'HELD', 10_000)).toBe(true);
    expect(await sem.tryAcquire()).toBeNull();

    await expect(semaphore(prefix, 3).tryAcquire()).rejects.toMatchObject({ code: ErrorCode.Conflict });

    // The Go holder leaves on SIGTERM; a waiting Holdfast acquire then gets its slot.
    const waiting = sem.acquire({ waitMs: 15_000 });
    go.child.kill('SIGTERM');
    const c = await waiting;
    expect(c.signal.aborted).toBe(false);
    await Promise.all([b!.release(), c.release()]);
    expect(b!.signal.reason).toMatchObject({ code: ErrorCode.Released });
  });

  test('a holder pruned as dead by another acquirer is told it lost its slot', async () => {
    const prefix = `holdfast-sem/${randomBytes(4).toString('hex')}`;
    const sem = semaphore(prefix, 1);
    const held = await sem.tryAcquire();
    // Its session vanishes (behaviour "delete" removes its contender entry): the next acquirer prunes it.
    await fetch(`${http}/v1/session/destroy/${held!.session}`, { method: 'PUT' });
    const next = await semaphore(prefix, 1).acquire({ waitMs: 10_000 });
    await new Promise<void>((resolve) => (held!.signal.aborted ? resolve() : held!.signal.addEventListener('abort', () => resolve(), { once: true })));
    expect(held!.signal.reason).toMatchObject({ code: ErrorCode.Lost });
    await next.release();
  });
});
