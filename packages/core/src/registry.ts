import { AdapterMissingError, InvalidArgumentError } from './errors.js';
import { COMMON_PROVIDER_OPTION_NAMES, type CommonProviderOptions } from './provider-options.js';
import type { LockProvider } from './types.js';

/** What an adapter package exports so that `createLockProvider(url)` can build it. */
export interface AdapterModule {
  /**
   * `url` is the configured text, unparsed: some schemes (multi-host `mongodb://a,b/db`) are not
   * WHATWG URLs, so each adapter parses its own.
   */
  createProviderFromUrl(url: string, options?: CreateLockProviderOptions): Promise<LockProvider> | LockProvider;
}

export interface CreateLockProviderOptions extends CommonProviderOptions {
  /** Adapter-specific settings that do not fit in the URL. */
  readonly adapter?: Readonly<Record<string, unknown>>;
  /**
   * Adapter modules by URL scheme (`{ 'redis:': await import('@holdfast/redis') }`), used before the
   * built-in table: for bundled apps, and for adapters outside this project.
   */
  readonly adapters?: Readonly<Record<string, AdapterModule>>;
}

/** URL scheme -> adapter package. Core never imports these itself; the app installs the one it uses. */
export const ADAPTER_PACKAGES: Readonly<Record<string, string>> = {
  'memory:': '@holdfast/memory',
  'mongodb:': '@holdfast/mongodb',
  'mongodb+srv:': '@holdfast/mongodb',
  'consul:': '@holdfast/consul',
  'redis:': '@holdfast/redis',
  'rediss:': '@holdfast/redis',
  'redis+cluster:': '@holdfast/redis',
  'rediss+cluster:': '@holdfast/redis',
  'redis+sentinel:': '@holdfast/redis',
  'rediss+sentinel:': '@holdfast/redis',
  'postgres:': '@holdfast/postgres',
  'postgresql:': '@holdfast/postgres',
  'mysql:': '@holdfast/mysql',
  'etcd:': '@holdfast/etcd',
  'zookeeper:': '@holdfast/zookeeper',
};

/** One registry per process, shared by the ESM and CommonJS copies of core an app may load. */
const REGISTRY = Symbol.for('holdfast.adapters');
const registered: Map<string, AdapterModule> = ((globalThis as Record<symbol, unknown>)[REGISTRY] ??= new Map()) as Map<
  string,
  AdapterModule
>;

/**
 * Makes `scheme` (e.g. "etcd:") build providers with `adapter`, ahead of the built-in table. For
 * adapters outside this project, and for bundled apps where a dynamic import cannot find a package.
 */
export function registerAdapter(scheme: string, adapter: AdapterModule): void {
  registered.set(normalizeScheme(scheme), validAdapter(adapter, scheme));
}

const MISSING_URL_HELP =
  'no lock backend configured: pass a URL to createLockProvider() or set HOLDFAST_URL ' +
  '(redis://host:6379, consul://host:8500, mongodb://host/db; "memory:" for locks inside this process only)';

/** `HOLDFAST_URL`, or undefined when it is unset or empty. */
export function configuredUrl(): string | undefined {
  return process.env.HOLDFAST_URL || undefined;
}

/**
 * Builds a provider from a URL such as `redis://host:6379`, `consul://host:8500/prefix`,
 * `mongodb://host/db` or `memory:`. Without an argument `HOLDFAST_URL` is used. There is no silent
 * default: a missing URL is an InvalidArgumentError, because in-process locks exclude nothing
 * across processes and must be asked for by name (`memory:`).
 */
export async function createLockProvider(
  url: string | URL | undefined = configuredUrl(),
  options: CreateLockProviderOptions = {},
): Promise<LockProvider> {
  if (url === undefined) throw new InvalidArgumentError('url', MISSING_URL_HELP);
  checkOptionNames(options);
  const text = urlText(url);
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(text)?.[1]?.toLowerCase();
  if (!scheme) throw new InvalidArgumentError('url', `"${redactUrl(text)}" is not a URL (expected e.g. redis://host:6379 or memory:)`);
  const adapter = options.adapters?.[scheme] ?? registered.get(scheme) ?? (await importAdapter(scheme));
  return adapter.createProviderFromUrl(text, options);
}

const OPTION_NAMES = new Set<string>([...COMMON_PROVIDER_OPTION_NAMES, 'adapter', 'adapters']);

/** A misspelled or misplaced option must not be dropped silently. */
function checkOptionNames(options: CreateLockProviderOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', 'expected an object');
  const unknown = Object.keys(options).filter((name) => !OPTION_NAMES.has(name));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(
      'options',
      `unknown option ${unknown.join(', ')}; backend settings go in options.adapter (see docs/options.md)`,
    );
  }
}

async function importAdapter(scheme: string): Promise<AdapterModule> {
  const packageName = ADAPTER_PACKAGES[scheme];
  if (!packageName) {
    const known = [...new Set([...Object.keys(ADAPTER_PACKAGES), ...registered.keys()])].join(' ');
    throw new InvalidArgumentError('url', `unknown scheme "${scheme}"; expected one of ${known}, or registerAdapter() one`);
  }
  let loaded: unknown;
  try {
    // In the CommonJS build (dist/cjs) this compiles to require(): every adapter has a "require" export.
    loaded = await import(packageName);
  } catch (error) {
    if (isPackageNotFound(error, packageName)) throw new AdapterMissingError(packageName, scheme, error);
    throw new AdapterMissingError(packageName, scheme, error, 'is installed but could not be loaded');
  }
  return validAdapter(loaded, scheme);
}

function validAdapter(candidate: unknown, scheme: string): AdapterModule {
  if (typeof (candidate as AdapterModule | null)?.createProviderFromUrl !== 'function') {
    throw new InvalidArgumentError('adapter', `the adapter for "${scheme}" has no createProviderFromUrl() function`);
  }
  return candidate as AdapterModule;
}

function normalizeScheme(scheme: string): string {
  const normalized = scheme.toLowerCase().endsWith(':') ? scheme.toLowerCase() : `${scheme.toLowerCase()}:`;
  if (!/^[a-z][a-z0-9+.-]*:$/.test(normalized)) throw new InvalidArgumentError('scheme', `"${scheme}" is not a URL scheme`);
  return normalized;
}

function urlText(url: string | URL): string {
  if (url instanceof URL) return url.href;
  if (typeof url !== 'string' || url.length === 0) throw new InvalidArgumentError('url', 'expected a non-empty URL string');
  return url;
}

/** The URL without its password and query values, for messages and logs. */
export function redactUrl(text: string): string {
  return text.replace(/(\/\/[^/@:]*:)[^/@]*@/, '$1***@').replace(/([?&][^=&#]+=)[^&#]*/g, '$1***');
}

/** True only when the adapter package itself is missing, not one of its own dependencies. */
function isPackageNotFound(error: unknown, packageName: string): boolean {
  const code = (error as { code?: string } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  const message = String((error as Error).message);
  return message.includes(`'${packageName}'`) || message.includes(`"${packageName}"`);
}
