import { InvalidArgumentError } from '@holdfast/core';
import { ADAPTER_OPTIONS, type AdapterOptions, type MysqlProviderOptions } from './options.js';
import { DEFAULT_TABLE } from './table-names.js';
import { parseMysqlUrl } from './url.js';

/** The adapter's settings with defaults, from the options and the URL's parameters. */
export interface Settings extends Required<AdapterOptions> {
  /** mysql2's `uri` (Holdfast's parameters removed); undefined with an app's pool. */
  readonly uri: string | undefined;
}

const DEFAULTS: Required<AdapterOptions> = { table: DEFAULT_TABLE, createTables: true, pollIntervalMs: 250, connectTimeoutMs: 3000 };

/** A setting may come from the URL or from the options, not both (which one would win is not obvious). */
export function settingsFrom(options: MysqlProviderOptions): Settings {
  const { uri, ...fromUrl }: { uri: string | undefined } & AdapterOptions =
    options.url === undefined ? { uri: undefined } : parseMysqlUrl(options.url);
  const settings: Record<string, unknown> = { ...DEFAULTS, uri };
  for (const name of ADAPTER_OPTIONS) {
    if (options[name] !== undefined && fromUrl[name] !== undefined)
      throw new InvalidArgumentError(name, 'given both in the URL and in the options; give it once');
    settings[name] = options[name] ?? fromUrl[name] ?? DEFAULTS[name];
  }
  return settings as unknown as Settings;
}
