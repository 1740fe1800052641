import type { BenchRow } from './types.js';

/**
 * A module's measurements one after another: a step that fails is reported with its reason and the
 * others still run, so one slow or broken server does not cost the rest of the table.
 */
export class Steps {
  readonly rows: BenchRow[] = [];
  readonly failures: string[] = [];

  constructor(
    private readonly log: (line: string) => void,
    /** `--steps`: names (or their beginnings) of the steps to run; empty = all. */
    private readonly only: readonly string[] = [],
  ) {}

  async run(name: string, step: () => Promise<BenchRow | BenchRow[]>): Promise<void> {
    if (this.only.length > 0 && !this.only.some((wanted) => name.startsWith(wanted))) return;
    this.log(name);
    try {
      const rows = await step();
      this.rows.push(...(Array.isArray(rows) ? rows : [rows]));
    } catch (error) {
      this.failures.push(`${name}: ${(error as Error).message}`);
      this.log(`${name}: failed: ${(error as Error).message}`);
    }
  }
}
