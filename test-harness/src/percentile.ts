/**
 * Percentile of an unsorted sample (nearest rank: the smallest value with at least p % of the sample
 * at or below it); NaN for an empty one. The bench and the soak both report through this one.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
