import { ErrorCode } from '@holdfast/core';
import { createMemoryProvider } from '@holdfast/memory';
import { codeOf, rejection, until, within } from '@holdfast/test-harness/helpers';
import { expect, test } from 'vitest';
import { LeaseSpans, leaseText, renderWatch } from '../src/watch-view.js';

const PLAIN = { unicode: false, width: Number.POSITIVE_INFINITY };
/** Generous for a loaded machine: the in-process backend answers in microseconds. */
const MEMORY_ANSWER_MS = 5000;

test('a frame shows each held lock with holder, token, reason, the waiters the backend counts and its lease bar', async () => {
  const provider = createMemoryProvider();
  try {
    const held = (await provider.tryAcquire('jobs/report', { reason: 'nightly report', ttlMs: 10_000 }))!;
    const stopWaiter = new AbortController();
    const waiter = provider.acquire('jobs/report', { signal: stopWaiter.signal });
    const waiterEnded = within(rejection(waiter, 'the aborted waiter'), MEMORY_ANSWER_MS, 'the aborted waiter');
    let locks = await provider.list({ prefix: 'jobs/' });
    await until(
      async () => (locks = await provider.list({ prefix: 'jobs/' }))[0]?.details?.['waiters'] === 1,
      MEMORY_ANSWER_MS,
      'the waiter counted by the backend',
    );
    const spans = new LeaseSpans();
    const listedAt = Date.now();
    spans.update(locks, listedAt);
    const lines = renderWatch({ title: 'watch', locks, listedAt }, spans, listedAt, PLAIN);
    expect(lines[0]).toMatch(/^watch {2}1 held {2}\d{4}-\d\d-\d\dT/);
    expect(lines[2]).toMatch(/^KEY\s+HOLDER\s+TOKEN\s+REASON\s+WAITERS\s+LEASE$/);
    const cells = lines[3]!.split(/ {2,}/);
    expect(cells.slice(0, 5)).toEqual(['jobs/report', provider.owner, String(held.token), 'nightly report', '1']);
    expect(cells[5]).toMatch(/^\[#{20}\] (9\.\d|10\.0)s$/);
    stopWaiter.abort();
    expect(codeOf(await waiterEnded)).toBe(ErrorCode.Aborted);
    await held.release();
    const after = await provider.list({ prefix: 'jobs/' });
    expect(renderWatch({ title: 'watch', locks: after, listedAt }, spans, listedAt, PLAIN).slice(2)).toEqual(['(no locks held)']);
  } finally {
    await provider.close();
  }
});

test('the bar is the remaining share of the longest lease seen for that grant; a new token starts over', () => {
  const spans = new LeaseSpans();
  const now = 1_000_000;
  const info = (token: bigint, remainingMs: number) => ({
    key: 'k',
    owner: 'o',
    reason: undefined,
    acquiredAt: new Date(now - 1000),
    expiresAt: new Date(now + remainingMs),
    token,
  });
  spans.update([info(1n, 10_000)], now);
  expect(leaseText(info(1n, 10_000), spans.spanOf(info(1n, 10_000)), now + 5000, PLAIN)).toBe(`[${'#'.repeat(10)}${'-'.repeat(10)}] 5.0s`);
  spans.update([info(2n, 4000)], now);
  expect(spans.spanOf(info(2n, 4000))).toBe(4000);
  expect(leaseText(info(2n, 4000), 4000, now + 4000, PLAIN)).toBe(`[${'-'.repeat(20)}] expired, not yet freed`);
  expect(leaseText({ ...info(3n, 0), expiresAt: null }, undefined, now, PLAIN)).toMatch(/kept alive by the holder/);
  spans.update([], now);
  expect(spans.spanOf(info(2n, 4000))).toBeUndefined();
});

test('a terminal frame is cut to its width; a failed refresh is shown under the last answer', () => {
  const spans = new LeaseSpans();
  const locks = [{ key: 'x'.repeat(100), owner: 'o', reason: 'r', acquiredAt: new Date(0), expiresAt: null, token: 7n }];
  const lines = renderWatch({ title: 'watch', locks, listedAt: 0, failure: 'connection refused' }, spans, 0, { unicode: true, width: 40 });
  expect(lines.every((line) => line.length <= 40)).toBe(true);
  expect(lines[3]).toBe('x'.repeat(40));
  expect(lines.at(-1)).toBe('backend failed: connection refused (show');
});
