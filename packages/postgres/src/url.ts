import { InvalidArgumentError } from '@holdfast/core';
import { adapterUrl } from '@holdfast/core/backend';

/** Lease mode (rows with an expiry, the default) or session mode (advisory locks held by a connection). */
export type PostgresMode = 'lease' | 'session';
export const MODES: readonly PostgresMode[] = ['lease', 'session'];

/** Holdfast's own URL parameters, taken out before the rest goes to pg. */
export interface UrlSettings {
  /** The URL without Holdfast's parameters: pg's connection string. */
  readonly connectionString: string;
  readonly mode?: PostgresMode;
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

/**
 * `postgres://user:password@host:5432/db?table=holdfast_locks&createTables=false&pollInterval=2s`
 * (also `postgresql://`). Holdfast's parameters are `mode` (lease or session), `table`,
 * `createTables`, `pollInterval` and `connectTimeout`; pg's own (`sslmode`, `application_name`, ...)
 * pass through; others are refused.
 */
export function parsePostgresUrl(input: string | URL): UrlSettings {
  const { url, settings } = adapterUrl(input, {
    schemes: ['postgres:', 'postgresql:'],
    example: 'postgres://user@host:5432/db',
    own: {
      mode: ['mode', 'text'],
      table: ['table', 'text'],
      createTables: ['createTables', 'boolean'],
      pollInterval: ['pollIntervalMs', 'duration'],
      connectTimeout: ['connectTimeoutMs', 'duration'],
    },
    driver: { name: 'pg', parameters: PG_PARAMETERS },
  });
  if (settings.mode !== undefined) checkMode(settings.mode, 'url mode');
  checkSslMode(url.searchParams.get('sslmode'));
  return { connectionString: url.href, ...settings };
}

export function checkMode(mode: unknown, argument: string): asserts mode is PostgresMode {
  if (!MODES.includes(mode as PostgresMode)) {
    throw new InvalidArgumentError(argument, `expected ${MODES.join(' or ')}, got ${JSON.stringify(mode)}`);
  }
}

// What pg's connection-string parser knows; it reads any other sslmode as "require" without a word.
const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

function checkSslMode(mode: string | null): void {
  if (mode !== null && !SSL_MODES.includes(mode)) {
    throw new InvalidArgumentError('url', `sslmode must be one of ${SSL_MODES.join(', ')}, got "${mode}"`);
  }
}
