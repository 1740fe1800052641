import { randomBytes } from 'node:crypto';
import { CHANNELS, ErrorCode, type LockProvider } from '@holdfast/core';
import { codeOf, lostWithin, rejection, within } from '@holdfast/test-harness/helpers';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, test } from 'vitest';
import { ATTRIBUTES as A, METRIC_NAMES as M, SPAN_NAMES } from '../src/index.js';
import { nextEvent } from './events.js';
import { Telemetry } from './telemetry.js';

/** How long the holder keeps a contended key after its waiter began waiting: the wait the histogram must show. */
const HELD_WHILE_WAITED_MS = 50;
/** A bound for a step that is quick on an idle machine (a grant, a hand-off, a release): CI runs loaded. */
const STEP_MS = 10_000;
/** A short wait that ends in a timeout, and a TTL renewed a few times within a test. */
const SHORT_WAIT_MS = 100;

export interface InstrumentedBackend {
  /** The backend's name, as its events carry it. */
  readonly name: string;
  /** A new provider, closed after the test. */
  open(): LockProvider;
  /** A TTL that renews (at a third of it) several times within a test, and is allowed by the backend. */
  readonly renewingTtlMs: number;
  /** The reason a holder's loss gets when another provider force-releases its key. */
  readonly lossReasonWhenForcedElsewhere: string;
}

/** The instrumentation's spans, metrics and attributes, as a user reads them from the SDK, on one backend. */
export function defineInstrumentationTests(backend: InstrumentedBackend): void {
  const label = { [A.backend]: backend.name, [A.key]: 'otel' };
  let telemetry: Telemetry | undefined;
  const instrument = (options: ConstructorParameters<typeof Telemetry>[0] = { keyLabel: (key) => key.split('/')[0] }): Telemetry =>
    (telemetry = new Telemetry(options));
  afterEach(() => telemetry?.close());
  const newKey = (): string => `otel/${randomBytes(6).toString('hex')}`;

  describe(`OpenTelemetry instrumentation on ${backend.name}`, { timeout: 60_000 }, () => {
    test('a contended key: acquire spans per outcome, busy answers, the wait in the wait histogram, grants and holds', async () => {
      const t = instrument();
      const [a, b] = [backend.open(), backend.open()];
      const key = newKey();
      const first = await within(a.acquire(key, { waitMs: STEP_MS }), STEP_MS, 'the free key is granted');
      expect(await within(b.tryAcquire(key), STEP_MS, 'tryAcquire answers')).toBeNull();
      const waitStarted = nextEvent(CHANNELS.wait);
      const waiting = b.acquire(key, { waitMs: 30_000 });
      await within(waitStarted, STEP_MS, 'the second acquire waits');
      await new Promise((resolve) => setTimeout(resolve, HELD_WHILE_WAITED_MS));
      await first.release();
      const second = await within(waiting, STEP_MS, 'the waiter is granted the released key');
      await second.release();

      const acquires = t.spans(SPAN_NAMES.acquire, label);
      expect(acquires.map((span) => span.attributes[A.acquireOutcome])).toEqual(['granted', 'busy', 'granted']);
      expect(acquires.map((span) => span.attributes[A.token])).toEqual([String(first.token), undefined, String(second.token)]);
      expect(acquires.map((span) => span.attributes[A.waitMs])).toEqual([STEP_MS, 0, 30_000]);
      expect(acquires[2]!.events.map((event) => event.name)).toEqual(['holdfast.wait']);
      expect(acquires.every((span) => span.status.code === SpanStatusCode.UNSET)).toBe(true);
      const holds = t.spans(SPAN_NAMES.hold, { ...label, [A.holdOutcome]: 'released' });
      expect(holds.map((span) => span.attributes[A.token])).toEqual([String(first.token), String(second.token)]);
      // Each hold is linked to the acquire that got it.
      expect(holds.map((span) => span.links[0]?.context.spanId)).toEqual([
        acquires[0]!.spanContext().spanId,
        acquires[2]!.spanContext().spanId,
      ]);

      expect(await t.sum(M.grants, label)).toBe(2);
      expect(await t.sum(M.busy, label)).toBe(2);
      const waited = await t.histogram(M.waitDuration, { ...label, [A.acquireOutcome]: 'granted' });
      expect(waited.count).toBe(2);
      expect(waited.max).toBeGreaterThanOrEqual(HELD_WHILE_WAITED_MS / 1000);
      expect(waited.max).toBeLessThan(STEP_MS / 1000);
      expect((await t.histogram(M.waitDuration, { ...label, [A.acquireOutcome]: 'busy' })).count).toBe(1);
      const held = await t.histogram(M.holdDuration, { ...label, [A.holdOutcome]: 'released' });
      expect(held.count).toBe(2);
      expect(held.max).toBeGreaterThanOrEqual(HELD_WHILE_WAITED_MS / 1000);
      expect(await t.unit(M.waitDuration)).toBe('s');
      expect(await t.unit(M.holdDuration)).toBe('s');
      expect(await t.sum(M.losses, label)).toBe(0);
    });

    test("the acquire and hold spans are children of the span active where acquire() was called, in the caller's trace", async () => {
      const t = instrument();
      const a = backend.open();
      const request = t.tracerProvider.getTracer('the app').startSpan('app.request');
      const granted = context.with(trace.setSpan(context.active(), request), () => a.acquire(newKey(), { waitMs: STEP_MS }));
      // Outside the request's context now: the hold's span still belongs to the request.
      const lock = await within(granted, STEP_MS, 'the free key is granted');
      await lock.release();
      request.end();

      const spans = [...t.spans(SPAN_NAMES.acquire, label), ...t.spans(SPAN_NAMES.hold, label)];
      expect(spans).toHaveLength(2);
      for (const span of spans) {
        expect(span.parentSpanContext?.spanId, `${span.name}'s parent`).toBe(request.spanContext().spanId);
        expect(span.spanContext().traceId, `${span.name}'s trace`).toBe(request.spanContext().traceId);
      }
    });

    test('an acquire that times out and one that is aborted end their spans with those outcomes', async () => {
      const t = instrument();
      const [a, b] = [backend.open(), backend.open()];
      const key = newKey();
      const holder = await within(a.acquire(key, { waitMs: STEP_MS }), STEP_MS, 'the free key is granted');
      expect(codeOf(await rejection(b.acquire(key, { waitMs: SHORT_WAIT_MS })))).toBe(ErrorCode.Timeout);
      const cancel = new AbortController();
      const waitStarted = nextEvent(CHANNELS.wait);
      const aborted = rejection(b.acquire(key, { waitMs: 30_000, signal: cancel.signal }), 'the aborted acquire');
      await within(waitStarted, STEP_MS, 'the acquire waits');
      cancel.abort();
      expect(codeOf(await within(aborted, STEP_MS, 'the aborted acquire ends'))).toBe(ErrorCode.Aborted);
      await holder.release();

      const outcomes = t.spans(SPAN_NAMES.acquire, label).map((span) => span.attributes[A.acquireOutcome]);
      expect(outcomes).toEqual(['granted', 'timeout', 'aborted']);
      expect(await t.sum(M.busy, label)).toBe(2);
      const timedOut = await t.histogram(M.waitDuration, { ...label, [A.acquireOutcome]: 'timeout' });
      expect(timedOut.count).toBe(1);
      expect(timedOut.min).toBeGreaterThanOrEqual(SHORT_WAIT_MS / 1000);
      expect((await t.histogram(M.waitDuration, { ...label, [A.acquireOutcome]: 'aborted' })).count).toBe(1);
    });

    test('a forced release: the hold ends lost with its reason, in the loss counter, the hold histogram and the span', async () => {
      const t = instrument();
      const [a, b] = [backend.open(), backend.open()];
      const [own, elsewhere] = [newKey(), newKey()];
      const mine = await within(a.acquire(own, { waitMs: STEP_MS }), STEP_MS, 'the first key is granted');
      // A short TTL: a backend that learns of it at the next renewal tells the holder soon.
      const theirs = await within(
        a.acquire(elsewhere, { ttlMs: backend.renewingTtlMs, waitMs: STEP_MS }),
        STEP_MS,
        'the second key is granted',
      );
      expect(await within(a.forceRelease(own), STEP_MS, 'forceRelease through its own provider')).toBe(true);
      await lostWithin(mine, STEP_MS);
      expect(await within(b.forceRelease(elsewhere), STEP_MS, 'forceRelease through another provider')).toBe(true);
      await lostWithin(theirs, STEP_MS, 'the holder hears of the forced release');

      const reasons = [{ [A.lossReason]: 'force-released' }, { [A.lossReason]: backend.lossReasonWhenForcedElsewhere }];
      for (const reason of reasons) {
        expect(await t.sum(M.losses, { ...label, ...reason })).toBe(1);
        const held = await t.histogram(M.holdDuration, { ...label, ...reason, [A.holdOutcome]: 'lost' });
        expect(held.count).toBe(1);
      }
      const lost = t.spans(SPAN_NAMES.hold, { ...label, [A.holdOutcome]: 'lost' });
      expect(lost.map((span) => span.attributes[A.lossReason])).toEqual(reasons.map((reason) => reason[A.lossReason]));
      expect(lost.map((span) => span.status.code)).toEqual([SpanStatusCode.ERROR, SpanStatusCode.ERROR]);
      expect(lost[0]!.status.message).toContain('force-released');
      expect(await t.sum(M.losses, label)).toBe(2);
    });

    test('renewals are counted and marked on the hold span', async () => {
      const t = instrument();
      const a = backend.open();
      const lock = await within(a.acquire(newKey(), { ttlMs: backend.renewingTtlMs, waitMs: STEP_MS }), STEP_MS, 'the key is granted');
      await within(nextEvent(CHANNELS.renew), STEP_MS, 'a first renewal');
      await within(nextEvent(CHANNELS.renew), STEP_MS, 'a second renewal');
      await lock.release();
      expect(await t.sum(M.renewals, label)).toBeGreaterThanOrEqual(2);
      const [hold] = t.spans(SPAN_NAMES.hold, label);
      expect(hold!.events.filter((event) => event.name === 'holdfast.renewed').length).toBeGreaterThanOrEqual(2);
    });

    test('a hand-off ends the hold as handed-off', async () => {
      const t = instrument();
      const [a, b] = [backend.open(), backend.open()];
      const lock = await within(a.acquire(newKey(), { waitMs: STEP_MS }), STEP_MS, 'the key is granted');
      const resumed = await within(b.resume(lock.handOff()), STEP_MS, 'the other provider resumes the lock');
      await resumed.release();
      expect(t.spans(SPAN_NAMES.hold, { ...label, [A.holdOutcome]: 'handed-off' })).toHaveLength(1);
      expect((await t.histogram(M.holdDuration, { ...label, [A.holdOutcome]: 'handed-off' })).count).toBe(1);
    });

    test('without keyLabel no metric or span carries the key; a keyLabel that throws is reported, never thrown at the app', async () => {
      const t = instrument({});
      const a = backend.open();
      const lock = await within(a.acquire(newKey(), { waitMs: STEP_MS }), STEP_MS, 'the key is granted');
      await lock.release();
      expect(await t.attributeSets(M.grants)).toEqual([{ [A.backend]: backend.name }]);
      expect(t.spans(SPAN_NAMES.acquire).map((span) => A.key in span.attributes)).toEqual([false]);
      await t.close();

      const broken = instrument({
        keyLabel: () => {
          throw new Error('no label today');
        },
      });
      const again = await within(a.acquire(newKey(), { waitMs: STEP_MS }), STEP_MS, 'the key is granted all the same');
      await again.release();
      expect(broken.diagErrors.length).toBeGreaterThan(0);
      expect(await broken.sum(M.grants)).toBe(0);
    });
  });
}
