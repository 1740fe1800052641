import { InvalidArgumentError, parseDuration, redactUrl } from '@holdfast/core';

/** Holdfast's own URL parameters, taken out before the rest goes to pg. */
export interface UrlSettings {
  /** The URL without Holdfast's parameters: pg's connection string. */
  readonly connectionString: string;
  readonly table?: string;
  readonly createTables?: boolean;
  readonly pollIntervalMs?: number;
  readonly connectTimeoutMs?: number;
}

// Parameters pg's connection-string parser acts on; anything else would be silently ignored by it.
const PG_PARAMETERS = new Set([
  'host',
  'db',
  'encoding',
  'client_encoding',
  'application_name',
  'fallback_application_name',
  'options',
  'ssl',
  'sslmode',
  'sslcert',
  'sslkey',
  'sslrootcert',
  'sslnegotiation',
  'uselibpqcompat',
]);
const HOLDFAST_PARAMETERS = ['table', 'createTables', 'pollInterval', 'connectTimeout'] as const;

/**
 * `postgres://user:password@host:5432/db?table=holdfast_locks&createTables=false&pollInterval=2s`
 * (also `postgresql://`). Holdfast's parameters are `table`, `createTables`, `pollInterval` and
 * `connectTimeout`; pg's own (`sslmode`, `application_name`, ...) pass through; others are refused.
 */
export function parsePostgresUrl(input: string | URL): UrlSettings {
  const url = asUrl(input);
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new InvalidArgumentError('url', `expected postgres: or postgresql:, got "${url.protocol}"`);
  }
  const settings: { -readonly [K in keyof UrlSettings]: UrlSettings[K] } = { connectionString: '' };
  for (const name of [...new Set(url.searchParams.keys())]) {
    if (PG_PARAMETERS.has(name)) continue;
    const value = url.searchParams.get(name)!;
    if (name === 'table') settings.table = value;
    else if (name === 'createTables') settings.createTables = booleanParameter(name, value);
    else if (name === 'pollInterval') settings.pollIntervalMs = parseDuration(value, 'url pollInterval');
    else if (name === 'connectTimeout') settings.connectTimeoutMs = parseDuration(value, 'url connectTimeout');
    else {
      throw new InvalidArgumentError(
        'url',
        `unknown parameter "${name}"; Holdfast's are ${HOLDFAST_PARAMETERS.join(', ')}, pg's ${[...PG_PARAMETERS].join(', ')}`,
      );
    }
    url.searchParams.delete(name);
  }
  settings.connectionString = url.href;
  return settings;
}

function booleanParameter(name: string, value: string): boolean {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidArgumentError('url', `${name} must be true or false, got "${value}"`);
}

function asUrl(input: string | URL): URL {
  if (input instanceof URL) return new URL(input.href);
  try {
    return new URL(input);
  } catch {
    throw new InvalidArgumentError('url', `"${redactUrl(String(input))}" is not a valid URL (expected postgres://user@host:5432/db)`);
  }
}
