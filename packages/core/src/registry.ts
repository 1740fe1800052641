import { AdapterMissingError, InvalidArgumentError } from './errors.js';
import type { LockProvider } from './types.js';

/** What an adapter package exports so that `createLockProvider(url)` can build it. */
export interface AdapterModule {
  /**
   * `url` is the configured text, unparsed: some schemes (multi-host `mongodb://a,b/db`) are not
   * WHATWG URLs, so each adapter parses its own.
   */
  createProviderFromUrl(url: string, options?: CreateLockProviderOptions): Promise<LockProvider> | LockProvider;
}

export interface CreateLockProviderOptions {
  /** Identity shown as the owner of this instance's locks. */
  readonly owner?: string;
  /** Adapter-specific settings that do not fit in the URL. */
  readonly adapter?: Readonly<Record<string, unknown>>;
}

/** URL scheme -> adapter package. Core never imports these itself; the app installs the one it uses. */
export const ADAPTER_PACKAGES: Readonly<Record<string, string>> = {
  'memory:': '@holdfast/memory',
  'mongodb:': '@holdfast/mongodb',
  'mongodb+srv:': '@holdfast/mongodb',
  'consul:': '@holdfast/consul',
  'redis:': '@holdfast/redis',
  'rediss:': '@holdfast/redis',
};

export const DEFAULT_URL = 'memory:';

/** The backend URL when none is given: `HOLDFAST_URL`, else `memory:`. */
export function configuredUrl(): string {
  return process.env.HOLDFAST_URL || DEFAULT_URL;
}

/**
 * Builds a provider from a URL such as `redis://host:6379`, `consul://host:8500/prefix`,
 * `mongodb://host/db` or `memory:`. Without an argument, `HOLDFAST_URL` is used, then `memory:`.
 */
export async function createLockProvider(
  url: string | URL = configuredUrl(),
  options: CreateLockProviderOptions = {},
): Promise<LockProvider> {
  const text = urlText(url);
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(text)?.[1]?.toLowerCase();
  if (!scheme) throw new InvalidArgumentError('url', `"${text}" is not a URL (expected e.g. redis://host:6379 or memory:)`);
  const packageName = ADAPTER_PACKAGES[scheme];
  if (!packageName) {
    throw new InvalidArgumentError('url', `unknown scheme "${scheme}"; expected one of ${Object.keys(ADAPTER_PACKAGES).join(' ')}`);
  }
  let adapter: AdapterModule;
  try {
    adapter = (await import(packageName)) as AdapterModule;
  } catch (error) {
    if (isModuleNotFound(error, packageName)) throw new AdapterMissingError(packageName, scheme, error);
    throw error;
  }
  return adapter.createProviderFromUrl(text, options);
}

function urlText(url: string | URL): string {
  if (url instanceof URL) return url.href;
  if (typeof url !== 'string' || url.length === 0) throw new InvalidArgumentError('url', 'expected a non-empty URL string');
  return url;
}

function isModuleNotFound(error: unknown, packageName: string): boolean {
  const code = (error as { code?: string } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes(packageName);
}
