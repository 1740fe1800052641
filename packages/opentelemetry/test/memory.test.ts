import { channel } from 'node:diagnostics_channel';
import { CHANNELS, type LockProvider } from '@holdfast/core';
import { createMemoryProvider } from '@holdfast/memory';
import { within } from '@holdfast/test-harness/helpers';
import { afterEach, expect, test } from 'vitest';
import { METRIC_NAMES, SPAN_NAMES } from '../src/index.js';
import { defineInstrumentationTests } from './scenarios.js';
import { Telemetry } from './telemetry.js';

const providers: LockProvider[] = [];
afterEach(async () => {
  await Promise.allSettled(providers.splice(0).map((provider) => provider.close()));
});
const open = (): LockProvider => {
  const provider = createMemoryProvider();
  providers.push(provider);
  return provider;
};

defineInstrumentationTests({
  name: 'memory',
  open,
  // The memory backend's minimum is 10 ms; 300 renews every 100 ms.
  renewingTtlMs: 300,
  // The store tells the holder at once, before any renewal could find the key gone.
  lossReasonWhenForcedElsewhere: 'backend',
});

test('disposing the instrumentation leaves no subscriber on any channel, and records nothing more', async () => {
  const telemetry = new Telemetry();
  const names = Object.values(CHANNELS).filter((name) => name !== CHANNELS.backendRetry);
  expect(names.every((name) => channel(name).hasSubscribers)).toBe(true);
  const provider = open();
  const lock = await within(provider.acquire('otel/dispose', { waitMs: 1000 }), 1000, 'the key is granted');
  telemetry.instrumentation[Symbol.dispose]();
  expect(Object.values(CHANNELS).filter((name) => channel(name).hasSubscribers)).toEqual([]);
  await lock.release();
  const after = await within(provider.acquire('otel/dispose', { waitMs: 1000 }), 1000, 'the key is granted again');
  await after.release();
  expect(await telemetry.sum(METRIC_NAMES.grants)).toBe(1);
  // The hold that was open at disposal is forgotten, not exported half-done.
  expect(telemetry.spans(SPAN_NAMES.hold)).toEqual([]);
  expect(telemetry.spans(SPAN_NAMES.acquire)).toHaveLength(1);
  telemetry.instrumentation.dispose();
  await telemetry.close();
});
