import { InvalidArgumentError } from './errors.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses "500ms", "15s", "2m", "1h" or a bare number of milliseconds. */
export function parseDuration(text: string, name = 'duration'): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new InvalidArgumentError(name, `"${text}" is not a duration like 500ms, 15s or 2m`);
  const value = Number(match[1]) * UNITS[match[2] ?? 'ms']!;
  if (!Number.isFinite(value)) throw new InvalidArgumentError(name, `"${text}" is too large`);
  return Math.round(value);
}
