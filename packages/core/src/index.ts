export type { LockEvent, Logger } from './diagnostics.js';
export { CHANNELS } from './diagnostics.js';
export { parseDuration } from './duration.js';
export * from './errors.js';
export type { CommonProviderOptions } from './provider-options.js';
export type { AdapterModule, CreateLockProviderOptions } from './registry.js';
export { ADAPTER_PACKAGES, configuredUrl, createLockProvider, redactUrl, registerAdapter } from './registry.js';
export type {
  AcquireOptions,
  Capabilities,
  Election,
  ElectOptions,
  Leadership,
  ListOptions,
  Lock,
  LockInfo,
  LockProvider,
  ObserveOptions,
  Semaphore,
  WakeUpStyle,
} from './types.js';
export { MAX_KEY_BYTES, MAX_REASON_LENGTH, MAX_SEMAPHORE_LIMIT, validateKey } from './validation.js';
export { withLock } from './with-lock.js';
