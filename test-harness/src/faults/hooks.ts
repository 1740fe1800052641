import type { LockProvider } from '@holdfast/core';
import type { ServerAddress } from './address.js';

/** Provider-level bounds the fault cases set on the providers they build. */
export interface FaultProviderOptions {
  readonly callTimeoutMs: number;
  readonly closeTimeoutMs: number;
}

/**
 * What a cross-process adapter hands the conformance suite so that its fault cases (a loopback
 * proxy between provider and server, a hung server, a paused holder process) can run.
 */
export interface FaultHooks {
  /** The loopback address the test server listens on; fault proxies forward to it. */
  readonly server: ServerAddress;
  /**
   * A new provider that talks to the backend at `address` (a fault proxy in front of `server`, or
   * a listener that never answers) instead of `server`, built with the given per-call and close
   * bounds. It must not wait for the server to answer before it returns.
   */
  createProviderAt(address: ServerAddress, options: FaultProviderOptions): Promise<LockProvider> | LockProvider;
  /**
   * How long the "stalled grab" case holds back a grant request, in ms. Default 2000; set it above
   * any wall-clock timeout the backend protocol uses to judge a grab abandoned (MongoDB: > 5 s).
   */
  readonly stallMs?: number;
}

/** A target that has no single server to put a proxy in front of says why, and the cases skip. */
export interface NoFaultHooks {
  readonly unsupported: string;
}
