export * from './errors.js';
export type {
  AcquireOptions,
  Capabilities,
  ElectOptions,
  Election,
  Leadership,
  ListOptions,
  Lock,
  LockInfo,
  LockProvider,
  ObserveOptions,
  Semaphore,
  WakeUpStyle,
} from './types.js';
export { withLock } from './with-lock.js';
export { ADAPTER_PACKAGES, configuredUrl, createLockProvider, redactUrl, registerAdapter } from './registry.js';
export type { AdapterModule, CreateLockProviderOptions } from './registry.js';
export { MAX_KEY_BYTES, MAX_REASON_LENGTH, MAX_SEMAPHORE_LIMIT, validateKey } from './validation.js';
export { parseDuration } from './duration.js';
export { CHANNELS } from './diagnostics.js';
export type { LockEvent, Logger } from './diagnostics.js';
export type { CommonProviderOptions } from './provider-options.js';
