import type { Lock } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';
import { commandWith, type MessageMatcher, StallProxy } from './stall-proxy.js';

const mongodb = await useBackend('mongodb');

/** Longer than the act window (5 s): a late take must be refused by the server, not by a timer. */
const STALL_MS = 6_000;

/** The insert of one of the key's version records (a slot take), not the insert of its mirror. */
function versionInsertOf(key: string): MessageMatcher {
  const insert = commandWith(['insert'], key);
  return (message) => insert(message) && message.includes('.versions');
}

describe.skipIf(!mongodb.url)(`a slot take stalled on the way (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let proxy: StallProxy;
  beforeAll(async () => {
    proxy = await StallProxy.start(Number(new URL(url).port));
  });
  afterAll(() => proxy?.close());

  test(`a slot take delivered ${STALL_MS} ms late never makes a holder more than the limit`, async () => {
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    const first = provider(url, { owner: 'first' });
    const stalled = provider(proxied.href, { owner: 'stalled', callTimeoutMs: 30_000 });
    const prompt = provider(url, { owner: 'prompt' });
    const key = `stalled-slot/${Date.now().toString(36)}`;
    const slots: Lock[] = [];
    try {
      const one = await first.semaphore(key, 2).tryAcquire();
      expect(one, 'a free slot was not granted').not.toBeNull();
      slots.push(one!);
      // Connect the stalled provider first, so the only message held is its take.
      expect(await stalled.semaphore(key, 2).holders()).toHaveLength(1);
      const take = proxy.holdNext(versionInsertOf(key), STALL_MS);
      const fromStalled = stalled
        .semaphore(key, 2)
        .tryAcquire()
        .then(
          (slot) => ({ slot }),
          (error: unknown) => ({ error }),
        );
      await Promise.race([take.held, fromStalled.then(() => Promise.reject(new Error('the take finished without sending its insert')))]);
      // The stalled take was based on one holder; meanwhile another provider takes the last slot.
      const two = await prompt.semaphore(key, 2).tryAcquire();
      expect(two, 'the last free slot was not granted').not.toBeNull();
      slots.push(two!);
      await take.delivered;
      const outcome = await fromStalled;
      const report = JSON.stringify('error' in outcome ? String(outcome.error) : { token: String(outcome.slot?.token) });
      if ('slot' in outcome && outcome.slot) slots.push(outcome.slot);
      expect('error' in outcome ? null : outcome.slot, `a slot beyond the limit was granted: ${report}`).toBeNull();
      // Let a loss notice reach the holders (their holder check runs every 250 ms).
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(one!.signal.aborted || two!.signal.aborted, `a holder was told it lost its slot: ${report}`).toBe(false);
      expect(await one!.isHeld(), report).toBe(true);
      expect(await two!.isHeld(), report).toBe(true);
      const holders = await prompt.semaphore(key, 2).holders();
      expect(holders.map((holder) => holder.owner).sort(), report).toEqual(['first', 'prompt']);
      expect(holders.map((holder) => holder.token).sort(), report).toEqual([one!.token, two!.token].sort());
    } finally {
      await Promise.allSettled(slots.map((slot) => slot.release()));
      await Promise.allSettled([first.close(), stalled.close(), prompt.close()]);
    }
  });
});
