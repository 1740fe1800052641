/** Fault tooling for tests against real servers: a loopback TCP fault proxy and a hung listener. */

export type { ServerAddress } from './address.js';
export { addressOf, urlAt } from './address.js';
export type { FaultHooks, FaultProviderOptions, NoFaultHooks } from './hooks.js';
export type { HungListener } from './hung-listener.js';
export { hungListener } from './hung-listener.js';
export type { ChunkHold, CutMode, HeldChunk } from './tcp-proxy.js';
export { FaultProxy } from './tcp-proxy.js';
