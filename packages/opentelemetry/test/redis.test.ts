import { randomBytes } from 'node:crypto';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { createRedisProvider } from '@holdfast/redis';
import { addressOf, FaultProxy, urlAt } from '@holdfast/test-harness/faults';
import { codeOf, lostWithin, rejection, until, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, describe, expect, test } from 'vitest';
import { ATTRIBUTES as A, METRIC_NAMES as M, SPAN_NAMES } from '../src/index.js';
import { defineInstrumentationTests } from './scenarios.js';
import { Telemetry } from './telemetry.js';

const redis = await useBackend('redis');
const providers: LockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});
const open = (url = redis.url!): LockProvider => {
  const provider = createRedisProvider({ url });
  providers.push(provider);
  return provider;
};

/** Long enough for a renewal or two before the outage, short enough that the loss comes soon after it. */
const OUTAGE_TTL_MS = 1500;
/** A loaded CI machine's margin over the lease, for the loss to be reported. */
const LOADED_MARGIN_MS = 10_000;
/** How long after the loss the renewal's failed call may still be counted: core's 5 s call timeout and slack. */
const RENEW_ERROR_BOUND_MS = 7000;

describe.skipIf(!redis.url)(`redis (${redis.label})`, () => {
  defineInstrumentationTests({
    name: 'redis',
    open: () => open(),
    renewingTtlMs: 600,
    // A plain lock learns of it at its next renewal, which finds the key gone.
    lossReasonWhenForcedElsewhere: 'not-held',
  });

  test('an outage through a FaultProxy: backend errors per operation, a renewal-failed loss, an acquire that ends in error', async () => {
    let telemetry: Telemetry | undefined;
    const proxy = await FaultProxy.start(addressOf(redis.url!));
    try {
      const t = (telemetry = new Telemetry());
      const label = { [A.backend]: 'redis' };
      const holder = open(urlAt(redis.url!, proxy.address));
      const lock = await within(
        holder.acquire(`otel/${randomBytes(6).toString('hex')}`, { ttlMs: OUTAGE_TTL_MS, waitMs: 5000 }),
        5000,
        'the key is granted',
      );
      // Paused, not cut: a cut connection ends the provider's session, which the adapter reports at once.
      proxy.pause();
      await lostWithin(lock, OUTAGE_TTL_MS + LOADED_MARGIN_MS, 'the holder loses the lock it cannot renew');
      // The renewal's error is counted when its call gives up, which on a loaded machine can come just
      // after the lease ran out locally (the loss): waited for, bounded, rather than read at once.
      await until(
        async () => (await t.sum(M.backendErrors, { ...label, [A.operation]: 'renew' })) > 0,
        RENEW_ERROR_BOUND_MS,
        'a renew backend error counted',
      );
      expect(await t.sum(M.losses, { ...label, [A.lossReason]: 'renewal-failed' })).toBe(1);
      const [hold] = t.spans(SPAN_NAMES.hold, { ...label, [A.lossReason]: 'renewal-failed' });
      // Not asserted: a `holdfast.renewal_failed` event on it. Core ends the hold with renewal-failed
      // at its safety deadline whether the renewal in flight has failed yet or is still unanswered
      // (paused here), and on a loaded machine it was still unanswered once in 8 runs: the span had
      // ended before the failure came.
      expect(hold, 'a hold span ended with the loss reason renewal-failed').toBeDefined();

      // A provider that never reached the backend fails at once: an acquire span ending in error.
      proxy.cut('refuse');
      const stranger = open(urlAt(redis.url!, proxy.address));
      expect(codeOf(await rejection(stranger.acquire('otel/unreached', { waitMs: 5000 })))).toBe(ErrorCode.Backend);
      const [failed] = t.spans(SPAN_NAMES.acquire, { ...label, [A.acquireOutcome]: 'error' });
      expect(failed!.attributes[A.errorType]).toBe(ErrorCode.Backend);
      expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
      expect(await t.sum(M.backendErrors, { ...label, [A.operation]: 'acquire' })).toBeGreaterThan(0);
      expect((await t.histogram(M.waitDuration, { ...label, [A.acquireOutcome]: 'error' })).count).toBe(1);
    } finally {
      await proxy.close();
      await telemetry?.close();
    }
  });
});
