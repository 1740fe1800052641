import { InvalidArgumentError } from './errors.js';

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)/y;

/**
 * Parses a duration into whole milliseconds: a bare number of ms ("250"), or Go-style units,
 * compound like `consul lock -timeout` takes them ("500ms", "15s", "1m30s", "1h", "2d", "1.5s").
 */
export function parseDuration(text: string, name = 'duration'): number {
  const trimmed = String(text).trim();
  const bad = (): InvalidArgumentError => new InvalidArgumentError(name, `"${text}" is not a duration like 500ms, 15s, 1m30s or 2h`);
  let value: number;
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) {
    value = Number(trimmed);
  } else {
    value = 0;
    PART.lastIndex = 0;
    while (PART.lastIndex < trimmed.length) {
      const start = PART.lastIndex;
      const match = PART.exec(trimmed);
      if (!match || match.index !== start) throw bad();
      value += Number(match[1]) * UNITS[match[2]!]!;
    }
    if (trimmed.length === 0) throw bad();
  }
  if (!Number.isFinite(value) || value > Number.MAX_SAFE_INTEGER) throw new InvalidArgumentError(name, `"${text}" is too large`);
  return Math.round(value);
}
