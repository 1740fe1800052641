import type { BenchSettings } from './settings.js';

/** One measured figure. */
export interface BenchRow {
  readonly group: string;
  readonly subject: string;
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  readonly note?: string;
  /** The backend module that measured it; ratios compare rows of one module (same server, same run). */
  readonly module?: string;
}

/** A backend's benchmark: its rows, or an error saying why it could not run. */
export interface BenchModule {
  readonly name: string;
  /** Left out of the default run (named on the command line, it runs). */
  readonly optional?: boolean;
  run(settings: BenchSettings, log: (line: string) => void): Promise<ModuleResult>;
}

export interface ModuleResult {
  /** What the rows were measured on, as the server says it (e.g. "FerretDB v1.24.2"). */
  readonly server: string;
  readonly rows: BenchRow[];
  /** Steps that failed, with the reason; their rows are missing. */
  readonly failures: string[];
}

/** Frees a lock; what every subject's grant hands back. */
export type Release = () => Promise<void>;

/** One client of a lock library: its own connection(s), as a separate process would have. */
export interface LockClient {
  /** One attempt that never waits: a release, or null when the key is busy. */
  tryOnce(key: string): Promise<Release | null>;
  /** Waits for the key the library's own way; null when `signal` stopped the wait or the library gave up. */
  acquire(key: string, signal: AbortSignal): Promise<Release | null>;
  close(): Promise<void>;
}

/** A lock library (Holdfast or a peer) on one server, as the bench compares them. */
export interface LockSubject {
  readonly subject: string;
  /** Settings that are not the library's defaults, or how it waits. */
  readonly note?: string;
  /** The longest gap between a waiter's retries; 0 when the server wakes it. */
  readonly pollPeriodMs: number;
  client(): Promise<LockClient>;
}
