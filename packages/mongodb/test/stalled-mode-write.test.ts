import type { Lock, LockProvider } from '@holdfast/core';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { provider } from './fixtures.js';
import { commandWith, type MessageMatcher, StallProxy } from './stall-proxy.js';

const mongodb = await useBackend('mongodb');

/** Longer than the act window (5 s): a late take must be refused by the server, not by a timer. */
const STALL_MS = 6_000;

/** The insert of one of the key's version records (a read-write take), not the insert of its mirror. */
function versionInsertOf(key: string): MessageMatcher {
  const insert = commandWith(['insert'], key);
  return (message) => insert(message) && message.includes('.versions');
}

type Role = 'reader' | 'writer';

/**
 * A lease far longer than the stall: core itself refuses a grant whose reply came after its lease,
 * and the test is about what the server lets land, not about that check.
 */
const TTL_MS = 30_000;

function attempt(locks: LockProvider, key: string, role: Role): Promise<Lock | null> {
  const rw = locks.readWrite(key);
  return role === 'reader' ? rw.tryRead({ ttlMs: TTL_MS }) : rw.tryWrite({ ttlMs: TTL_MS });
}

/** Pairs that must never hold the key together: the stalled grant's role, then the prompt one's. */
const PAIRS: readonly (readonly [Role, Role])[] = [
  ['reader', 'writer'],
  ['writer', 'reader'],
  ['writer', 'writer'],
];

describe.skipIf(!mongodb.url)(`a read-write take stalled on the way (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let proxy: StallProxy;
  beforeAll(async () => {
    proxy = await StallProxy.start(Number(new URL(url).port));
  });
  afterAll(() => proxy?.close());

  test.each(PAIRS)(
    `a %s's take delivered ${STALL_MS} ms late while another provider's %s takes the key is never granted`,
    async (late, prompt) => {
      const proxied = new URL(url);
      proxied.port = String(proxy.port);
      const stalled = provider(proxied.href, { owner: 'stalled', callTimeoutMs: 30_000 });
      const other = provider(url, { owner: 'prompt' });
      const key = `stalled-mode/${late}-${prompt}/${Date.now().toString(36)}`;
      const grants: Lock[] = [];
      try {
        // Connect the stalled provider first, so the only message held is its take.
        expect(await stalled.readWrite(key).holders()).toEqual([]);
        const take = proxy.holdNext(versionInsertOf(key), STALL_MS);
        const fromStalled = attempt(stalled, key, late).then(
          (lock) => ({ lock }),
          (error: unknown) => ({ error }),
        );
        await Promise.race([take.held, fromStalled.then(() => Promise.reject(new Error('the take finished without sending its insert')))]);
        // The stalled take was based on the free key; meanwhile another provider takes it in the other mode.
        const held = await attempt(other, key, prompt);
        expect(held, `a free key refused a ${prompt} grant`).not.toBeNull();
        grants.push(held!);
        await take.delivered;
        const outcome = await fromStalled;
        const report = JSON.stringify('error' in outcome ? String(outcome.error) : { token: String(outcome.lock?.token) });
        if ('lock' in outcome && outcome.lock) grants.push(outcome.lock);
        expect('error' in outcome ? null : outcome.lock, `a ${late} granted beside a ${prompt}: ${report}`).toBeNull();
        // Let a loss notice reach the holder (its holder check runs every 250 ms).
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        expect(held!.signal.aborted, `the ${prompt} was told it lost the key: ${report}`).toBe(false);
        expect(await held!.isHeld(), report).toBe(true);
        const holders = await other.readWrite(key).holders();
        expect(
          holders.map((holder) => [holder.owner, holder.details?.['mode'], holder.token]),
          report,
        ).toEqual([['prompt', prompt === 'reader' ? 'shared' : 'exclusive', held!.token]]);
      } finally {
        await Promise.allSettled(grants.map((grant) => grant.release()));
        await Promise.allSettled([stalled.close(), other.close()]);
      }
    },
  );
});
