import { InvalidArgumentError } from '@holdfast/core';
import type { PostgresProviderOptions } from './options.js';
import { DEFAULT_TABLE } from './table-names.js';
import { type PostgresMode, parsePostgresUrl } from './url.js';

/** The adapter's settings with defaults, from the options and the URL's parameters. */
export interface Settings {
  /** pg's connection string (Holdfast's parameters removed); undefined with an app's pool. */
  readonly connectionString: string | undefined;
  readonly mode: PostgresMode;
  readonly table: string;
  readonly createTables: boolean;
  readonly pollIntervalMs: number;
  readonly connectTimeoutMs: number;
}

/** A setting may come from the URL or from the options, not both (which one would win is not obvious). */
export function settingsFrom(options: PostgresProviderOptions): Settings {
  const fromUrl = options.url === undefined ? undefined : parsePostgresUrl(options.url);
  const pick = <K extends 'mode' | 'table' | 'createTables' | 'pollIntervalMs' | 'connectTimeoutMs'>(
    name: K,
  ): PostgresProviderOptions[K] => {
    if (options[name] !== undefined && fromUrl?.[name] !== undefined) {
      throw new InvalidArgumentError(name, 'given both in the URL and in the options; give it once');
    }
    return options[name] ?? fromUrl?.[name];
  };
  const mode = pick('mode') ?? 'lease';
  if (mode === 'session' && pick('pollIntervalMs') !== undefined) {
    throw new InvalidArgumentError('pollIntervalMs', 'has no use in session mode: a waiter blocks on the lock itself');
  }
  return {
    connectionString: fromUrl?.connectionString,
    mode,
    table: pick('table') ?? DEFAULT_TABLE,
    createTables: pick('createTables') ?? true,
    pollIntervalMs: pick('pollIntervalMs') ?? 2000,
    connectTimeoutMs: pick('connectTimeoutMs') ?? 3000,
  };
}
