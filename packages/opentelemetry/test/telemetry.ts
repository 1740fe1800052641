import { type Attributes, context, diag } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  AggregationTemporality,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { type HoldfastInstrumentation, type HoldfastInstrumentationOptions, instrumentHoldfast } from '../src/index.js';

/** Long enough that only forceFlush() exports: a test reads the metrics when it chooses. */
const NO_PERIODIC_EXPORT_MS = 3_600_000;

/**
 * The OpenTelemetry SDK with its in-memory exporters, and the instrumentation writing to it; what a
 * test reads back: finished spans, counter sums and histograms, filtered by attributes.
 */
export class Telemetry {
  readonly spanExporter = new InMemorySpanExporter();
  readonly metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.spanExporter)] });
  readonly meterProvider: MeterProvider;
  readonly instrumentation: HoldfastInstrumentation;
  /** What the instrumentation reported through the OpenTelemetry diag logger (a subscriber that failed). */
  readonly diagErrors: unknown[] = [];

  constructor(options: Omit<HoldfastInstrumentationOptions, 'meterProvider' | 'tracerProvider'> = {}) {
    const reader = new PeriodicExportingMetricReader({ exporter: this.metricExporter, exportIntervalMillis: NO_PERIODIC_EXPORT_MS });
    this.meterProvider = new MeterProvider({ readers: [reader] });
    const errors = this.diagErrors;
    diag.setLogger({ error: (...args) => errors.push(args), warn() {}, info() {}, debug() {}, verbose() {} });
    // As an app's SDK set-up registers one: without it every context is the root, and no span has a parent.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    this.instrumentation = instrumentHoldfast({ ...options, meterProvider: this.meterProvider, tracerProvider: this.tracerProvider });
  }

  spans(name: string, attributes: Attributes = {}): ReadableSpan[] {
    return this.spanExporter.getFinishedSpans().filter((span) => span.name === name && matches(span.attributes, attributes));
  }

  /** The sum of a counter's points whose attributes include `attributes` (0 when none). */
  async sum(name: string, attributes: Attributes = {}): Promise<number> {
    const points = await this.points(name, attributes);
    return points.reduce((total, point) => total + (point.value as number), 0);
  }

  /** A histogram's points whose attributes include `attributes`, merged: count, sum, min, max (seconds). */
  async histogram(name: string, attributes: Attributes = {}): Promise<{ count: number; sum: number; min: number; max: number }> {
    const points = await this.points(name, attributes);
    const values = points.map((point) => point.value as Histogram);
    return {
      count: values.reduce((total, value) => total + value.count, 0),
      sum: values.reduce((total, value) => total + (value.sum ?? 0), 0),
      min: Math.min(...values.map((value) => value.min ?? Infinity)),
      max: Math.max(...values.map((value) => value.max ?? -Infinity)),
    };
  }

  /** The attribute sets a metric was recorded with. */
  async attributeSets(name: string): Promise<Attributes[]> {
    return (await this.points(name, {})).map((point) => point.attributes);
  }

  async unit(name: string): Promise<string | undefined> {
    return (await this.metric(name))?.descriptor.unit;
  }

  async close(): Promise<void> {
    this.instrumentation.dispose();
    diag.disable();
    context.disable();
    await Promise.all([this.meterProvider.shutdown(), this.tracerProvider.shutdown()]);
  }

  private async metric(name: string) {
    this.metricExporter.reset();
    await this.meterProvider.forceFlush();
    const exported = this.metricExporter.getMetrics().at(-1);
    const all = exported?.scopeMetrics.flatMap((scope) => scope.metrics) ?? [];
    return all.find((metric) => metric.descriptor.name === name);
  }

  private async points(name: string, attributes: Attributes) {
    const metric = await this.metric(name);
    if (!metric) return [];
    return (metric.dataPoints as { attributes: Attributes; value: unknown }[]).filter((point) => matches(point.attributes, attributes));
  }
}

function matches(actual: Attributes, wanted: Attributes): boolean {
  return Object.entries(wanted).every(([name, value]) => (value === undefined ? !(name in actual) : actual[name] === value));
}
