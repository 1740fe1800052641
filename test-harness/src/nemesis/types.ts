import type { FaultMark } from './check.js';
import type { FakeClock } from './clock.js';
import type { NetworkRig } from './network.js';

/** A backend's servers, started inside their hosts of the rig. */
export interface NemesisTarget {
  readonly backend: string;
  /** The hosts the servers run in (their namespaces), in member order. */
  readonly serverHosts: readonly string[];
  /** Starts the servers; those in `clocks` run under that fake clock. */
  start(rig: NetworkRig, clocks: ReadonlyMap<string, FakeClock>): Promise<void>;
  /** The URL worker `worker` uses (may differ by worker: a Consul client talks to one agent). */
  urlFor(worker: number): string;
  /** The server host that leads now, where the backend has one. */
  leader?(): Promise<string>;
  /** The server host that serves `key` now, where keys are spread over servers (a Redis Cluster's primary of its slot). */
  serverOf?(key: string): Promise<string>;
  /**
   * Stops the server in `host` gracefully and starts it again on its data; resolves once it serves
   * and the cluster has a leader again (a rolling restart's step). Where the backend supports it.
   */
  restart?(host: string): Promise<void>;
  stop(): Promise<void>;
}

/** What a step of a scenario may do. */
export interface NemesisControls {
  readonly rig: NetworkRig;
  readonly target: NemesisTarget;
  /** The fake clock of a server host (scenarios name the hosts they want under one). */
  clock(host: string): FakeClock;
  /** The run's lock keys, as the workers pass them to acquire(). */
  readonly keys: readonly string[];
  /** Workers that hold some key at this moment. */
  holders(): number[];
  /** The holds open at this moment, by grant id (`worker:n`): a worker granted again at once is a new hold. */
  holds(): { worker: number; grant: string }[];
  /** The host worker `worker` runs in. */
  clientHost(worker: number): string;
  /** Records a fault mark in the report (what happened, when; a heal names the workers it ends a fault for). */
  mark(action: string, heal?: { affected?: number[] }): void;
}

export interface NemesisStep {
  atMs: number;
  run(controls: NemesisControls): void | Promise<void>;
}

export interface Scenario {
  readonly name: string;
  readonly summary: string;
  readonly workers: number;
  readonly keys: number;
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly holdMs: [number, number];
  readonly writeEveryMs: number;
  readonly durationMs: number;
  /** Options for createLockProvider beside the URL (those a URL cannot carry, such as Redis `replicas`). */
  readonly providerOptions?: Record<string, unknown>;
  /** Server hosts that run under a fake clock. */
  readonly clockHosts?: readonly string[];
  /** The steps, in time order; the last one should heal everything. */
  readonly steps: readonly NemesisStep[];
  /**
   * Why double grants are possible in this scenario by the backend's documented guarantee (a server
   * clock jumping forward ends leases early): then they are reported, not failed on.
   */
  readonly doubleGrantsAllowed?: string;
  /**
   * Why a token may be given twice in this scenario by the backend's documented guarantee (a replica
   * promoted before it saw the old primary's last grants counts from where it stood): reported, not failed on.
   */
  readonly tokenRegressionsAllowed?: string;
}

export type { FaultMark };
