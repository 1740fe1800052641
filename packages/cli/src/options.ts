import { InvalidArgumentError, parseDuration } from '@holdfast/core';
import { UsageError } from './usage.js';

/** Runs a node:util parseArgs call, turning its complaints into usage errors (exit code 2). */
export function parsingFlags<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function durationFlag(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  try {
    return parseDuration(value, `--${name}`);
  } catch (error) {
    if (error instanceof InvalidArgumentError) throw new UsageError(error.message);
    throw error;
  }
}

export function positiveIntegerFlag(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  return parsed;
}
