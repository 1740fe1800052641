import type { LockProvider } from '@holdfast/core';

/** One measured figure. `ratio` compares it with another row measured in the same run. */
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

/** A backend's benchmark: returns its rows, or a reason it could not run. */
export interface BenchModule {
  readonly name: string;
  run(): Promise<BenchRow[]>;
}

export type ProviderFactory = () => Promise<LockProvider> | LockProvider;
