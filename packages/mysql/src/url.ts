import { InvalidArgumentError } from '@holdfast/core';
import { adapterUrl } from '@holdfast/core/backend';
import mysql from 'mysql2';

/** Holdfast's own URL parameters, taken out before the rest goes to mysql2. */
export interface UrlSettings {
  /** The URL without Holdfast's parameters: mysql2's `uri`. */
  readonly uri: string;
  readonly table?: string;
  readonly createTables?: boolean;
  readonly pollIntervalMs?: number;
  readonly connectTimeoutMs?: number;
}

// mysql2 turns every URL parameter into a connection option (and only warns about unknown ones):
// these make sense in a URL and change nothing this adapter relies on.
const MYSQL2_PARAMETERS = new Set(['ssl', 'charset', 'compress', 'socketPath', 'enableCleartextPlugin', 'localAddress']);

/**
 * `mysql://user:password@host:3306/db?table=holdfast_locks&createTables=false&pollInterval=250ms`.
 * Holdfast's parameters are `table`, `createTables`, `pollInterval` and `connectTimeout`; mysql2's
 * `ssl`, `charset`, `compress`, `socketPath`, `enableCleartextPlugin` and `localAddress` pass
 * through; others are refused.
 */
export function parseMysqlUrl(input: string | URL): UrlSettings {
  const { url, settings } = adapterUrl(input, {
    schemes: ['mysql:'],
    example: 'mysql://user@host:3306/db',
    own: {
      table: ['table', 'text'],
      createTables: ['createTables', 'boolean'],
      pollInterval: ['pollIntervalMs', 'duration'],
      connectTimeout: ['connectTimeoutMs', 'duration'],
    },
    driver: { name: 'mysql2', parameters: MYSQL2_PARAMETERS },
  });
  checkCharset(url.searchParams.get('charset'));
  return { uri: url.href, ...settings };
}

/** mysql2 throws a plain TypeError for a charset it does not know, and only when the pool is built. */
function checkCharset(charset: string | null): void {
  const known = (mysql as unknown as { Charsets: Record<string, number> }).Charsets;
  if (charset !== null && !Object.hasOwn(known, charset.toUpperCase())) {
    throw new InvalidArgumentError('url', `charset "${charset}" is not one MySQL knows (utf8mb4, latin1, ...)`);
  }
}
