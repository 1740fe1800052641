export { currentLock } from './current-lock.js';
export { HoldfastModule } from './holdfast.module.js';
export type { KeyTemplate } from './key-template.js';
export { LeaderOnly, type LeaderOnlyOptions } from './leader-only.js';
export type { HoldfastModuleAsyncOptions, HoldfastModuleScope, HoldfastOptions } from './module-options.js';
export { HOLDFAST_MODULE_OPTIONS, InjectLocks, LOCK_PROVIDER } from './tokens.js';
export { type BusyBehaviour, WithLock, type WithLockOptions } from './with-lock.js';
