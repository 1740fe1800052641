export type { LockMode } from './backend.js';
export type { AcquireOutcome, BackendErrorEvent, LockEvent, Logger, LossReason } from './diagnostics.js';
export { CHANNELS } from './diagnostics.js';
export { parseDuration } from './duration.js';
export * from './errors.js';
export type { LockProof } from './lock-proof.js';
export { MAX_KEYS_PER_MULTI_LOCK } from './multi-key-taker.js';
export type { CommonProviderOptions } from './provider-options.js';
export type { AdapterModule, CreateLockProviderOptions } from './registry.js';
export { ADAPTER_PACKAGES, configuredUrl, createLockProvider, redactUrl, registerAdapter } from './registry.js';
export { type Duration, type RunExclusiveOptions, type RunExclusiveResult, runExclusive } from './run-exclusive.js';
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
  MultiLock,
  ObserveOptions,
  ReadWriteLock,
  Semaphore,
  WakeUpStyle,
} from './types.js';
export { MAX_KEY_BYTES, MAX_REASON_LENGTH, MAX_SEMAPHORE_LIMIT, validateKey } from './validation.js';
export type {
  LockManagerOptions,
  WebLock,
  WebLockCallback,
  WebLockInfo,
  WebLockMode,
  WebLockOptions,
  WebLockSnapshot,
} from './web-locks.js';
export { LockManager } from './web-locks.js';
export { withLock } from './with-lock.js';
