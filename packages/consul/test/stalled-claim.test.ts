import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { addressOf, FaultProxy } from '@holdfast/test-harness/faults';
import { codeOf, settle, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');
const PREFIX = 'holdfast-stalled-claim';
const CALL_MS = 1000;
const STALL_MS = 3000;

describe.skipIf(!consul.url)('a slot claim whose answer never came never makes a second holder', () => {
  const providers: LockProvider[] = [];
  const proxies: FaultProxy[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((locks) => locks.close()));
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  });

  test("the claim transaction held back past A's call timeout: A fails typed, and the late claim holds no slot", async () => {
    const proxy = await FaultProxy.start(addressOf(consul.url!));
    proxies.push(proxy);
    const a = createConsulProvider({ url: `http://${proxy.address.host}:${proxy.address.port}`, prefix: PREFIX, callTimeoutMs: CALL_MS });
    const b = createConsulProvider({ url: consul.url!.replace('consul://', 'http://'), prefix: PREFIX });
    providers.push(a, b);
    const key = `k-${randomBytes(4).toString('hex')}`;
    // A fresh provider's slot attempt: 1. read the directory, 2. create the session, 3. the claim transaction.
    const hold = proxy.holdClientChunk(3, STALL_MS);
    const attempt = settle(a.semaphore(key, 1).tryAcquire());
    const held = await within(hold.engaged, CALL_MS * 2, "A's claim reaches the proxy");
    expect(held.preview, 'the held chunk is not the claim transaction').toMatch(/PUT \/v1\/txn/);
    const outcome = await within(attempt, CALL_MS * 2, "A's tryAcquire answers at its call timeout");
    expect(outcome.value, 'A was granted a slot whose claim never reached Consul').toBeUndefined();
    expect(codeOf(outcome.error), 'an unanswered claim is not a backend failure').toBe(ErrorCode.Backend);

    await within(hold.released, STALL_MS + CALL_MS, 'the held claim is passed on');
    // The late claim carries A's session, destroyed when A gave up: Consul rolls it back (or, had it
    // landed first, the session's end would take its contender entry along). The slot stays free.
    const slot = await within(b.semaphore(key, 1).acquire({ waitMs: CALL_MS * 2 }), CALL_MS * 3, "B gets the slot after A's late claim");
    // Nothing announces what the late claim did: look a few times.
    for (let look = 0; look < 10; look++) {
      const holders = await within(b.semaphore(key, 1).holders(), CALL_MS * 5, 'holders() answers');
      expect(
        holders.map((holder) => holder.token),
        "A's late claim made it a second holder",
      ).toEqual([slot.token]);
      expect(slot.signal.aborted, "B's slot was lost to A's late claim").toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await within(slot.release(), CALL_MS * 5, 'release answers');
  });
});
