import { CHANNELS } from '@holdfast/core';
import type { Attributes } from '@opentelemetry/api';
import type { LabelsOf } from './instrument.js';
import type { LockMetrics } from './metrics.js';
import { ATTRIBUTES, type HoldOutcome } from './names.js';
import type { LockSpans } from './spans.js';

type Event = Record<string, unknown>;

/** The loss reason of a release the backend did not confirm (core reports that lock as lost). */
const RELEASE_UNCONFIRMED = 'release-unconfirmed';

/**
 * What each of core's channels records (the fields are listed in docs/observability.md). Durations
 * come from the events themselves (`waitedMs`, `heldMs`), so they are right even for a lock taken
 * before the instrumentation started.
 */
export function lockEventHandlers(metrics: LockMetrics, spans: LockSpans, labelsOf: LabelsOf): Record<string, (event: Event) => void> {
  const endHold = (event: Event, outcome: HoldOutcome, reason: unknown, detail?: string): void => {
    const attributes: Attributes = { ...labelsOf(event), [ATTRIBUTES.holdOutcome]: outcome };
    if (outcome === 'lost') {
      attributes[ATTRIBUTES.lossReason] = String(reason);
      metrics.losses.add(1, { ...labelsOf(event), [ATTRIBUTES.lossReason]: String(reason) });
    }
    metrics.recordSeconds(metrics.holdDuration, event.heldMs, attributes);
    spans.endHold(event.lockId, attributes, outcome === 'lost' ? (detail ?? String(reason)) : undefined);
  };

  return {
    [CHANNELS.acquire]: (event) => spans.startAcquire(event.acquireId, { ...labelsOf(event), [ATTRIBUTES.waitMs]: Number(event.waitMs) }),
    [CHANNELS.wait]: (event) => spans.acquireEvent(event.acquireId, 'holdfast.wait'),
    [CHANNELS.acquireEnd]: (event) => {
      const labels = labelsOf(event);
      const outcome = String(event.outcome);
      if (event.foundBusy === true) metrics.busy.add(1, labels);
      metrics.recordSeconds(metrics.waitDuration, event.waitedMs, { ...labels, [ATTRIBUTES.acquireOutcome]: outcome });
      const attributes: Attributes = { [ATTRIBUTES.acquireOutcome]: outcome };
      if (typeof event.token === 'bigint') attributes[ATTRIBUTES.token] = String(event.token);
      if (event.error !== undefined) attributes[ATTRIBUTES.errorType] = errorType(event.error);
      spans.endAcquire(event.acquireId, attributes, event.error);
    },
    [CHANNELS.grant]: (event) => {
      const labels = labelsOf(event);
      metrics.grants.add(1, labels);
      spans.startHold(event.acquireId, event.lockId, { ...labels, [ATTRIBUTES.token]: String(event.token) });
    },
    [CHANNELS.renew]: (event) => {
      metrics.renewals.add(1, labelsOf(event));
      spans.holdEvent(event.lockId, 'holdfast.renewed');
    },
    [CHANNELS.renewFailed]: (event) =>
      spans.holdEvent(event.lockId, 'holdfast.renewal_failed', { [ATTRIBUTES.errorType]: errorType(event.error) }),
    [CHANNELS.lost]: (event) => endHold(event, 'lost', event.reason, typeof event.detail === 'string' ? event.detail : undefined),
    [CHANNELS.release]: (event) =>
      event.confirmed === false ? endHold(event, 'lost', RELEASE_UNCONFIRMED) : endHold(event, 'released', undefined),
    [CHANNELS.handOff]: (event) => endHold(event, 'handed-off', undefined),
    [CHANNELS.backendError]: (event) =>
      metrics.backendErrors.add(1, { ...labelsOf(event), [ATTRIBUTES.operation]: String(event.operation) }),
  };
}

/** A Holdfast error's code (`BACKEND`, `LOCK_TIMEOUT`, ...), else the error's name: a small, fixed set. */
function errorType(error: unknown): string {
  if (error !== null && typeof error === 'object') {
    const { code, name } = error as { code?: unknown; name?: unknown };
    if (typeof code === 'string') return code;
    if (typeof name === 'string') return name;
  }
  return '_OTHER';
}
