export type { HoldfastInstrumentation, HoldfastInstrumentationOptions } from './instrument.js';
export { INSTRUMENTATION_NAME, instrumentHoldfast } from './instrument.js';
export type { HoldOutcome } from './names.js';
export { ATTRIBUTES, DURATION_BUCKETS_S, METRIC_NAMES, SPAN_NAMES } from './names.js';
