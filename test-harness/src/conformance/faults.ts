import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ErrorCode, type Lock } from '@holdfast/core';
import { expect, type TestContext, test } from 'vitest';
import { childScript } from '../faults/child-script.js';
import { FaultRig } from '../faults/fault-rig.js';
import type { FaultHooks } from '../faults/hooks.js';
import type { CutMode } from '../faults/tcp-proxy.js';
import { abortedWithin, abortTime, codeOf, elapsed, rejection, settle, until, within } from '../helpers/index.js';
import { FencedResource } from './fencing.js';
import type { CaseFactory } from './suite-types.js';
import { type CaseContext, skipBecause } from './support.js';

/** Bounds the fault cases give the providers they build, so a hung server costs seconds, not minutes. */
const HUNG_CALL_TIMEOUT_MS = 1000;
const HUNG_CLOSE_TIMEOUT_MS = 1000;
const DEFAULT_STALL_MS = 2000;

/** The target's fault hooks and a rig disposed when the test ends, or a printed skip. */
export function faultSetup(c: CaseContext, t: TestContext): { hooks: FaultHooks; rig: FaultRig } | undefined {
  if (!c.capabilities.crossProcess) return void skipBecause(t, `${c.target.name} is not shared between processes`);
  const faults = c.target.faults;
  if (!faults) return void skipBecause(t, `${c.target.name} gives no fault hooks (target.faults)`);
  if ('unsupported' in faults) return void skipBecause(t, faults.unsupported);
  const rig = new FaultRig(faults);
  t.onTestFinished(() => rig.dispose());
  return { hooks: faults, rig };
}

export function faultCases(cases: CaseFactory): void {
  test.concurrent('F1. a hung server does not hang the caller: tryAcquire, a waiting acquire, an abort and close() keep their bounds', async (t) => {
    const c = cases(t);
    const setup = faultSetup(c, t);
    if (!setup) return;
    const slack = c.timing.slackMs;
    const hung = await setup.rig.hung();
    const provider = await setup.rig.providerAt(hung.address, {
      callTimeoutMs: HUNG_CALL_TIMEOUT_MS,
      closeTimeoutMs: HUNG_CLOSE_TIMEOUT_MS,
    });
    const key = c.key();

    const tried = await elapsed(() =>
      rejection(within(provider.tryAcquire(key), HUNG_CALL_TIMEOUT_MS + slack * 3, 'tryAcquire against a hung server')),
    );
    expect(codeOf(tried.value), 'tryAcquire against a hung server must fail with a BackendError').toBe(ErrorCode.Backend);
    expect(tried.ms, `tryAcquire against a hung server must fail within callTimeoutMs (${HUNG_CALL_TIMEOUT_MS}) + slack`).toBeLessThan(
      HUNG_CALL_TIMEOUT_MS + slack,
    );
    expect(hung.connectionsAccepted, 'the provider never connected to the address it was given').toBeGreaterThan(0);

    const waitMs = 1500;
    const waited = await elapsed(() =>
      rejection(within(provider.acquire(key, { waitMs }), waitMs + slack * 3, 'acquire({ waitMs: 1500 }) against a hung server')),
    );
    expect(
      [ErrorCode.Backend, ErrorCode.Timeout],
      'a waiting acquire against a hung server must end in a BackendError or a timeout',
    ).toContain(codeOf(waited.value));
    expect(waited.ms, `acquire({ waitMs: ${waitMs} }) against a hung server must give up within waitMs + slack`).toBeLessThan(
      waitMs + slack,
    );

    const abortAfterMs = 300;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), abortAfterMs);
    const aborted = await elapsed(() =>
      rejection(
        within(provider.acquire(key, { signal: controller.signal }), abortAfterMs + slack * 3, 'an aborted acquire against a hung server'),
      ),
    ).finally(() => clearTimeout(timer));
    // A provider whose server has never answered may say so at once (case 90) rather than wait for
    // the abort; only an answer before the abort may be that BackendError.
    if (codeOf(aborted.value) === ErrorCode.Backend) {
      expect(aborted.ms, 'a BackendError came after the abort: an aborted acquire must fail with LockAbortedError').toBeLessThan(
        abortAfterMs,
      );
    } else {
      expect(codeOf(aborted.value), 'an acquire aborted by its signal must fail with LockAbortedError').toBe(ErrorCode.Aborted);
    }
    expect(aborted.ms, `a signal aborted at ${abortAfterMs} ms must be honoured within slack while a call hangs`).toBeLessThan(
      abortAfterMs + slack,
    );

    const closed = await elapsed(() => within(provider.close(), HUNG_CLOSE_TIMEOUT_MS + slack * 3, 'close() with a hung server'));
    expect(closed.ms, `close() with a hung server must return within closeTimeoutMs (${HUNG_CLOSE_TIMEOUT_MS}) + slack`).toBeLessThan(
      HUNG_CLOSE_TIMEOUT_MS + slack,
    );
    await until(
      () => hung.openConnections === 0,
      slack,
      () => `close() left ${hung.openConnections} connection(s) open to the hung server`,
    );
  });

  test.concurrent('F2. close() while holding a lock on a server that stopped answering returns in time and reports the lock lost', async (t) => {
    const c = cases(t);
    const setup = faultSetup(c, t);
    if (!setup) return;
    const slack = c.timing.slackMs;
    const proxy = await setup.rig.proxy();
    const provider = await setup.rig.providerAt(proxy.address, {
      callTimeoutMs: HUNG_CALL_TIMEOUT_MS,
      closeTimeoutMs: HUNG_CLOSE_TIMEOUT_MS,
    });
    const lock = await within(provider.tryAcquire(c.key()), HUNG_CALL_TIMEOUT_MS + slack, 'tryAcquire of a free key through the proxy');
    expect(lock, 'a free key must be granted through the proxy').not.toBeNull();
    proxy.pause();
    const closed = await elapsed(() =>
      within(provider.close(), HUNG_CLOSE_TIMEOUT_MS + slack * 3, 'close() with a lock held and the server hung'),
    );
    expect(closed.ms, `close() must return within closeTimeoutMs (${HUNG_CLOSE_TIMEOUT_MS}) + slack whatever the server does`).toBeLessThan(
      HUNG_CLOSE_TIMEOUT_MS + slack,
    );
    expect(lock!.signal.aborted, 'a lock whose release could not be confirmed must end').toBe(true);
    expect(codeOf(lock!.signal.reason), 'a lock whose release was not confirmed must be reported lost, not released').toBe(ErrorCode.Lost);
  });

  const stalls: [step: number, call: 'tryAcquire' | 'acquire'][] = [
    [1, 'tryAcquire'],
    [2, 'tryAcquire'],
    [3, 'tryAcquire'],
    [1, 'acquire'],
  ];
  for (const [step, call] of stalls) {
    test.concurrent(`F3. a stalled grab must not double-grant (${call}, write ${step} of the grab held back)`, async (t) => {
      const c = cases(t);
      const setup = faultSetup(c, t);
      if (!setup) return;
      await stalledGrab(c, setup, step, call);
    });
  }

  test.concurrent('F4. a paused holder process is told it lost the lock when it resumes, and its fenced write is rejected', async (t) => {
    const c = cases(t);
    if (!faultSetup(c, t)) return;
    if (!c.target.child) return skipBecause(t, `${c.target.name} gives no way to build a provider in a child process`);
    await pausedHolder(c, t);
  });

  test.concurrent('F6. a holder cut off until it is told it lost the lock lets the lock go once the server answers again', async (t) => {
    const c = cases(t);
    const setup = faultSetup(c, t);
    if (!setup) return;
    await lostThenReconnected(c, setup.rig);
  });

  for (const mode of ['silent', 'refuse'] as const) {
    test.concurrent(`F5. a cut connection (${mode}): the holder is told before anyone else is granted, then the lock moves on`, async (t) => {
      const c = cases(t);
      const setup = faultSetup(c, t);
      if (!setup) return;
      await cutConnection(c, setup, mode);
    });
  }
}

async function stalledGrab(
  c: CaseContext,
  { hooks, rig }: { hooks: FaultHooks; rig: FaultRig },
  step: number,
  call: 'tryAcquire' | 'acquire',
): Promise<void> {
  const slack = c.timing.slackMs;
  const stallMs = hooks.stallMs ?? DEFAULT_STALL_MS;
  // A's calls must outlive the stall, so that a late grant reaches A itself rather than being undone by core.
  const callTimeoutMs = stallMs + 2 * slack;
  const proxy = await rig.proxy();
  const a = await rig.providerAt(proxy.address, { callTimeoutMs, closeTimeoutMs: 2000 });
  const [b, observer] = await c.providers2();
  const warm = await within(a.tryAcquire(c.key('warm-up')), callTimeoutMs, 'a warm-up grant through the proxy');
  expect(warm, 'a free key must be granted through the proxy').not.toBeNull();
  await within(warm!.release(), callTimeoutMs, 'release of the warm-up grant');

  const key = c.key();
  const resource = new FencedResource();
  const hold = proxy.holdClientChunk(step, stallMs);
  // When A's grant comes back, watch its signal: the held write may have been a background one (a
  // heartbeat), so A can be granted first, then lose the lock, then B be granted: that is no overlap.
  let aAbortedAt: () => number | undefined = () => undefined;
  const aGrab = settle(call === 'tryAcquire' ? a.tryAcquire(key) : a.acquire(key, { waitMs: stallMs + slack })).then((outcome) => {
    if (outcome.value) aAbortedAt = abortTime(outcome.value.signal);
    return outcome;
  });
  const engaged = await within(Promise.race([hold.engaged, aGrab.then(() => undefined)]), callTimeoutMs + slack, `A's ${call}`);
  if (!engaged) {
    hold.cancel();
    // A's grab needed fewer than `step` writes: nothing was stalled, and the key was free.
    const outcome = await aGrab;
    console.log(`[conformance] ${c.target.name}: a ${call} sent fewer than ${step} writes; the stall case reduces to plain exclusion`);
    expect(outcome.error, `A's ${call} of a free key failed`).toBeUndefined();
    expect(outcome.value, `A's ${call} of a free key was refused`).toBeTruthy();
    expect(await within(observer.tryAcquire(key), callTimeoutMs, 'an observer tryAcquire'), 'a held key was granted again').toBeNull();
    return;
  }
  console.log(`[conformance] ${c.target.name}: ${call} write ${step} held for ${stallMs} ms: ${engaged.bytes} bytes "${engaged.preview}"`);

  // While A's request is stalled on the way, B asks the server directly; it may get the key.
  const bWaitMs = Math.max(stallMs - Math.min(500, stallMs / 4), 200);
  const bOutcome = await settle(within(b.acquire(key, { waitMs: bWaitMs }), bWaitMs + slack * 2, "B's acquire during A's stall"));
  if (bOutcome.error !== undefined)
    expect(codeOf(bOutcome.error), "B's acquire may time out (A got there first), not fail").toBe(ErrorCode.Timeout);
  const bLock: Lock | undefined = bOutcome.value;
  const bGrantedAt = performance.now();
  if (bLock) expect(resource.write(bLock.token, 'B'), "B's first fenced write").toBe(true);

  const aOutcome = await within(aGrab, stallMs + callTimeoutMs + slack * 2, `A's stalled ${call}`);
  const aLock = aOutcome.value ?? null;
  if (aLock) {
    const aHeldFirstAndWasTold = bLock !== undefined && aLock.token < bLock.token && (aAbortedAt() ?? Infinity) <= bGrantedAt;
    expect(
      !bLock || bLock.signal.aborted || aHeldFirstAndWasTold,
      `double grant: A's stalled ${call} was granted (token ${aLock.token}) while B held the lock (token ${bLock?.token}) and neither was told in time`,
    ).toBe(true);
    if (!aHeldFirstAndWasTold) expect(resource.write(aLock.token, 'A'), "A's fenced write after a legitimate grant").toBe(true);
  }
  await within(hold.released, stallMs + slack, 'the held write is passed on');
  if (!bLock) {
    expect(aLock, 'neither A nor B got the free key').not.toBeNull();
    return;
  }
  // The late bytes have reached the server: for a while after, B is either still the holder the server
  // reports or has been told it lost the lock. Watching needs time; there is no event to wait for.
  const watchUntil = performance.now() + slack;
  while (performance.now() < watchUntil && !bLock.signal.aborted) {
    const info = await within(observer.inspect(key), callTimeoutMs, 'inspect after the stalled write landed');
    if (bLock.signal.aborted) break;
    expect(
      info?.token,
      `after A's stalled write landed the server no longer reports B (token ${bLock.token}) as holder, yet B was not told`,
    ).toBe(bLock.token);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const bWriteAccepted = resource.write(bLock.token, 'B again');
  if (!bWriteAccepted) expect(bLock.signal.aborted, 'B still believes it holds the lock, but a newer token has written').toBe(true);
  if (!bLock.signal.aborted) {
    expect(await within(observer.tryAcquire(key), callTimeoutMs, 'an observer tryAcquire'), 'a key held by B was granted again').toBeNull();
  }
}

interface ChildLines {
  next(prefix: string, withinMs: number): Promise<string>;
}

function childLines(child: ChildProcess): ChildLines {
  const lines: string[] = [];
  let notify: (() => void) | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(line);
    notify?.();
  });
  child.on('exit', () => notify?.());
  return {
    async next(prefix, withinMs) {
      const deadline = performance.now() + withinMs;
      for (;;) {
        const index = lines.findIndex((line) => line.startsWith(prefix));
        if (index >= 0) return lines.splice(index, 1)[0]!;
        if (child.exitCode !== null) throw new Error(`the child process exited (code ${child.exitCode}) before printing "${prefix}"`);
        const left = deadline - performance.now();
        if (left <= 0) throw new Error(`the child process did not print "${prefix}" within ${withinMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          notify = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    },
  };
}

async function pausedHolder(c: CaseContext, t: TestContext): Promise<void> {
  const slack = c.timing.slackMs;
  const ttlMs = c.timing.shortTtlMs;
  const key = c.key();
  const script = childScript('faults/paused-holder.js');
  const child = spawn(process.execPath, [script, JSON.stringify({ ...c.target.child, key, ttlMs })], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  });
  const lines = childLines(child);
  const held = await lines.next('HELD ', 20_000);
  const childToken = BigInt(held.slice('HELD '.length));
  const parent = await c.provider();
  expect(
    await within(parent.tryAcquire(key), slack * 2, 'tryAcquire of the child-held key'),
    'a key held by the child process was granted',
  ).toBeNull();

  child.kill('SIGSTOP');
  const bound = ttlMs + c.timing.graceMs + slack;
  const taken = await elapsed(() =>
    within(parent.acquire(key, { waitMs: bound + slack }), bound + slack * 3, "the parent's acquire while the holder is paused"),
  );
  const resource = new FencedResource();
  expect(taken.value.token, 'the successor must get a higher token').toBeGreaterThan(childToken);
  expect(resource.write(taken.value.token, 'parent'), "the successor's fenced write").toBe(true);

  child.kill('SIGCONT');
  const resumedAt = performance.now();
  child.stdin!.write('WRITE\n');
  const write = (await lines.next('WRITE ', slack * 2)).split(' ');
  expect(resource.write(BigInt(write[1]!), 'paused holder, after resume'), "the resumed holder's fenced write must be rejected").toBe(
    false,
  );
  const lost = await lines.next('LOST ', Math.max(0, resumedAt + slack - performance.now())).catch((error: unknown) => {
    throw new Error(`the resumed holder was not told it lost the lock within ${slack} ms of resuming (${String(error)})`);
  });
  expect(lost, 'the resumed holder must be told it lost the lock (LockLostError)').toBe(`LOST ${ErrorCode.Lost}`);
  // The resumed child must not take the key back: the parent still holds it, as far as it and the server know.
  expect(taken.value.signal.aborted, "the successor's lock ended after the paused holder resumed").toBe(false);
  expect(
    await within(taken.value.isHeld(), slack * 2, "the successor's isHeld()"),
    'the successor no longer holds the lock after the paused holder resumed',
  ).toBe(true);
}

async function cutConnection(c: CaseContext, { rig }: { hooks: FaultHooks; rig: FaultRig }, mode: CutMode): Promise<void> {
  const slack = c.timing.slackMs;
  const ttlMs = c.timing.shortTtlMs;
  const proxy = await rig.proxy();
  const a = await rig.providerAt(proxy.address, { callTimeoutMs: HUNG_CALL_TIMEOUT_MS, closeTimeoutMs: HUNG_CLOSE_TIMEOUT_MS });
  const b = await c.provider();
  const key = c.key();
  const resource = new FencedResource();
  const aLock = await within(
    a.acquire(key, { ttlMs, waitMs: slack }),
    HUNG_CALL_TIMEOUT_MS + slack * 2,
    'A acquires a free key through the proxy',
  );
  expect(resource.write(aLock.token, 'A'), "A's fenced write").toBe(true);

  proxy.cut(mode);
  const cutAt = performance.now();
  let abortedAt: number | undefined;
  aLock.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
  const bound = ttlMs + c.timing.graceMs + slack;
  const bOutcome = await settle(
    within(b.acquire(key, { waitMs: bound + slack }), bound + slack * 3, "B's acquire after A's connection was cut"),
  );
  const aToldInTime = aLock.signal.aborted;
  expect(bOutcome.error, 'B never got the lock after A was cut off').toBeUndefined();
  expect(aToldInTime, `B was granted ${Math.round(bOutcome.at - cutAt)} ms after the cut while A was not yet told it lost the lock`).toBe(
    true,
  );
  expect(codeOf(aLock.signal.reason), "A's signal must carry a LockLostError").toBe(ErrorCode.Lost);
  expect(abortedAt! - cutAt, 'A must be told within TTL + grace + slack of the cut').toBeLessThan(bound);
  expect(bOutcome.at - cutAt, 'B must get the lock within TTL + grace + slack (+ a wake-up) of the cut').toBeLessThan(
    bound + c.timing.promptWakeMs,
  );
  const bLock = bOutcome.value!;
  expect(bLock.token, "the successor's token").toBeGreaterThan(aLock.token);
  expect(resource.write(bLock.token, 'B'), "B's fenced write").toBe(true);
  expect(resource.write(aLock.token, 'A, stale'), "A's stale fenced write").toBe(false);
}

async function lostThenReconnected(c: CaseContext, rig: FaultRig): Promise<void> {
  const slack = c.timing.slackMs;
  const ttlMs = c.timing.shortTtlMs;
  const bound = ttlMs + c.timing.graceMs + slack;
  const proxy = await rig.proxy();
  const a = await rig.providerAt(proxy.address, { callTimeoutMs: HUNG_CALL_TIMEOUT_MS, closeTimeoutMs: HUNG_CLOSE_TIMEOUT_MS });
  const b = await c.provider();
  const key = c.key();
  const aLock = await within(
    a.acquire(key, { ttlMs, waitMs: slack }),
    HUNG_CALL_TIMEOUT_MS + slack * 2,
    'A acquires a free key through the proxy',
  );
  proxy.pause();
  await abortedWithin(aLock.signal, bound).catch(() => {
    throw new Error(`A was not told it lost the lock within TTL + grace + slack (${bound} ms) of its server going silent`);
  });
  // The server answers A again (with whatever A sent meanwhile): A must not keep the lost lock alive.
  proxy.resume();
  const resumedAt = performance.now();
  const bOutcome = await settle(within(b.acquire(key, { waitMs: bound + slack }), bound + slack * 3, "B's acquire after A's loss"));
  expect(
    bOutcome.error,
    'the lock stayed held on the server after its holder was told it lost it and the server answered again (a session or heartbeat kept it alive)',
  ).toBeUndefined();
  expect(bOutcome.at - resumedAt, 'B must get the lock within TTL + grace + slack once the server answers A again').toBeLessThan(bound);
  expect(bOutcome.value!.token, "the successor's token").toBeGreaterThan(aLock.token);
}
