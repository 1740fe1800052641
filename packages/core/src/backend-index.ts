/** For adapter authors: the primitives an adapter implements and the helpers core lends them. */

export { linkedController, pause, sleep, untilAborted } from './abort.js';
export type {
  BackendGrant,
  Busy,
  CallContext,
  Extension,
  Granted,
  GrantOutcome,
  GrantRequest,
  LockBackend,
  LockMode,
  ModeRequest,
  QueuePlace,
  SlotRequest,
  WaitOptions,
} from './backend.js';
export { busy, granted, NOT_HELD, stillHeld } from './backend.js';
export { DEFAULT_CALL_TIMEOUT_MS } from './backend-caller.js';
export { CutConnections, type StillRunning } from './cut-connections.js';
export type { OptionNames } from './option-names.js';
export { checkOptionNames } from './option-names.js';
export type { ProviderOptions } from './provider.js';
export { createProvider, providerOptions } from './provider.js';
export { COMMON_PROVIDER_OPTION_NAMES } from './provider-options.js';
export { safetyDeadline, safetyMargin } from './renewal-policy.js';
export type { ScheduledTask } from './timer-heap.js';
export { TimerHeap } from './timer-heap.js';
export { checkTimerRange, clampToTimerRange, MAX_TIMER_MS } from './timer-range.js';
export { validateTtl } from './validation.js';
export type { WaitListOptions } from './wait-list.js';
export { WaitList } from './wait-list.js';
export { toBackendError } from './wrap-backend-error.js';
/** The longest lease an adapter offers when its server sets no lower limit: 7 days. */
export const MAX_TTL_MS = 7 * 24 * 3_600_000;
export { isModeRequest, isSlotRequest } from './attempt.js';
export type { ExtendItem } from './extend-batcher.js';
export { ExtendBatcher, extendId } from './extend-batcher.js';
export type { AdapterUrlSpec, UrlParameterKind } from './url-parameters.js';
export { adapterUrl } from './url-parameters.js';
