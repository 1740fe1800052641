import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { InvalidArgumentError } from '@holdfast/core';
import { type Attributes, diag, type MeterProvider, metrics, type TracerProvider, trace } from '@opentelemetry/api';
import { lockEventHandlers } from './handlers.js';
import { LockMetrics } from './metrics.js';
import { ATTRIBUTES } from './names.js';
import { LockSpans } from './spans.js';

/** The instrumentation scope of the tracer and the meter. */
export const INSTRUMENTATION_NAME = '@holdfast/opentelemetry';

export interface HoldfastInstrumentationOptions {
  /** Where the metrics go; the global one (`metrics.getMeterProvider()`) by default. */
  readonly meterProvider?: MeterProvider;
  /** Where the spans go; the global one (`trace.getTracerProvider()`) by default. */
  readonly tracerProvider?: TracerProvider;
  /**
   * The `holdfast.lock.key` attribute of a lock's spans and metrics, made from its key: return a
   * value of bounded cardinality (a prefix such as `'invoice'` for `'invoice:8123'`), or `undefined`
   * for none. The default gives none: keys often carry ids, and one time series per id would swamp
   * a metrics backend.
   */
  readonly keyLabel?: (key: string) => string | undefined;
}

/** What `instrumentHoldfast` returns: disposing it unsubscribes from every channel. */
export interface HoldfastInstrumentation extends Disposable {
  /** Stops recording: unsubscribes, and forgets the spans still open (they are not exported). */
  dispose(): void;
}

/**
 * Records every Holdfast provider of this process (any backend, created before or after) through
 * core's diagnostics channels: nothing to wrap, and nothing is published while no instrumentation
 * is subscribed.
 */
export function instrumentHoldfast(options: HoldfastInstrumentationOptions = {}): HoldfastInstrumentation {
  const keyLabel = options.keyLabel ?? noKeyLabel;
  if (typeof keyLabel !== 'function') throw new InvalidArgumentError('keyLabel', 'expected a function (key) => string | undefined');
  const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(INSTRUMENTATION_NAME);
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(INSTRUMENTATION_NAME);
  const spans = new LockSpans(tracer);
  const handlers = lockEventHandlers(new LockMetrics(meter), spans, labelsWith(keyLabel));
  const subscriptions = Object.entries(handlers).map(([name, handle]) => {
    // A subscriber's exception would be rethrown in the app on the next tick: a metric is never worth that.
    const listener = (message: unknown): void => {
      try {
        handle(message as Record<string, unknown>);
      } catch (error) {
        diag.error(`${INSTRUMENTATION_NAME}: recording ${name} failed`, error);
      }
    };
    subscribe(name, listener);
    return () => unsubscribe(name, listener);
  });
  let disposed = false;
  const dispose = (): void => {
    if (disposed) return;
    disposed = true;
    for (const unsubscribeOne of subscriptions) unsubscribeOne();
    spans.clear();
  };
  return { dispose, [Symbol.dispose]: dispose };
}

function noKeyLabel(): undefined {
  return undefined;
}

/** The attributes every span and metric of one lock carries: its backend, and its key label if any. */
export type LabelsOf = (event: Record<string, unknown>) => Attributes;

function labelsWith(keyLabel: (key: string) => string | undefined): LabelsOf {
  return (event) => {
    const labels: Attributes = { [ATTRIBUTES.backend]: String(event.backend) };
    const label = typeof event.key === 'string' ? keyLabel(event.key) : undefined;
    if (label !== undefined) labels[ATTRIBUTES.key] = String(label);
    return labels;
  };
}
