import { InvalidArgumentError, parseDuration } from '@holdfast/core';
import { checkTimerRange, MAX_TTL_MS } from '@holdfast/core/backend';

/** MongoDB's own defaults (ReplSetDistLockManager): ping every 30 s, expire after 15 min, retry every 500 ms (kLockRetryInterval). */
export const DEFAULT_PING_INTERVAL_MS = 30_000;
export const DEFAULT_LOCK_EXPIRATION_MS = 15 * 60_000;
export const DEFAULT_POLL_INTERVAL_MS = 500;
export const DEFAULT_LOCKS_COLLECTION = 'locks';
export const DEFAULT_PINGS_COLLECTION = 'lockpings';

export interface DistLockSettings {
  readonly locksCollection: string;
  readonly pingsCollection: string;
  readonly pingIntervalMs: number;
  /** The default lease (ttl) of a lock: how long its holder's ping may stay unchanged before a contender takes it. */
  readonly lockExpirationMs: number;
  /** Pause between attempts while waiting (MongoDB's kLockRetryInterval), and the polling interval without change streams. */
  readonly pollIntervalMs: number;
}

/** `holdfast*` query parameters: read by the adapter, removed before the URL reaches the driver. */
const URL_PARAMETERS = {
  holdfastPingInterval: 'pingIntervalMs',
  holdfastLockExpiration: 'lockExpirationMs',
  holdfastPollInterval: 'pollIntervalMs',
  holdfastLocksCollection: 'locksCollection',
  holdfastPingsCollection: 'pingsCollection',
  holdfastPort: 'port',
} as const;

/** Old names, refused by name so that a setting is never silently ignored. */
export const RENAMED_OPTIONS: Readonly<Record<string, string>> = {
  retryIntervalMs: 'pollIntervalMs',
  holdfastRetryInterval: 'holdfastPollInterval',
};

export interface UrlSettings {
  /** The URL to hand to the driver. */
  readonly driverUrl: string;
  readonly settings: Partial<DistLockSettings> & { port?: number };
}

/**
 * Works on the text, not on a WHATWG URL: MongoDB connection strings may list several hosts
 * (`mongodb://a:27017,b:27017/db`), which `new URL()` rejects.
 */
export function parseMongoUrl(url: string | URL): UrlSettings {
  const text = String(url);
  const queryAt = text.indexOf('?');
  const base = queryAt < 0 ? text : text.slice(0, queryAt);
  const kept = new URLSearchParams();
  const settings: Record<string, string | number> = {};
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(queryAt < 0 ? '' : text.slice(queryAt + 1))) {
    if (!name.startsWith('holdfast')) {
      kept.append(name, value);
      continue;
    }
    const renamed = RENAMED_OPTIONS[name];
    if (renamed !== undefined) throw new InvalidArgumentError('url', `parameter ${name} was renamed ${renamed}`);
    // The driver's own parameters may repeat (readPreferenceTags); Holdfast's never do.
    if (seen.has(name)) throw new InvalidArgumentError('url', `parameter "${name}" is given more than once`);
    seen.add(name);
    const setting = URL_PARAMETERS[name as keyof typeof URL_PARAMETERS];
    if (!setting)
      throw new InvalidArgumentError('url', `unknown parameter "${name}"; expected one of ${Object.keys(URL_PARAMETERS).join(' ')}`);
    if (setting === 'locksCollection' || setting === 'pingsCollection') settings[setting] = value;
    else if (setting === 'port') settings[setting] = Number.parseInt(value, 10);
    else settings[setting] = parseDuration(value, name);
  }
  const query = kept.toString();
  return { driverUrl: query ? `${base}?${query}` : base, settings };
}

export function resolveSettings(given: Partial<DistLockSettings>): DistLockSettings {
  const settings: DistLockSettings = {
    locksCollection: given.locksCollection ?? DEFAULT_LOCKS_COLLECTION,
    pingsCollection: given.pingsCollection ?? DEFAULT_PINGS_COLLECTION,
    pingIntervalMs: given.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS,
    lockExpirationMs: given.lockExpirationMs ?? DEFAULT_LOCK_EXPIRATION_MS,
    pollIntervalMs: given.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
  };
  for (const name of ['pingIntervalMs', 'lockExpirationMs', 'pollIntervalMs'] as const) {
    if (!Number.isSafeInteger(settings[name]) || settings[name] <= 0)
      throw new InvalidArgumentError(name, 'must be a positive whole number of ms');
  }
  checkTimerRange('pingIntervalMs', settings.pingIntervalMs);
  checkTimerRange('pollIntervalMs', settings.pollIntervalMs);
  // The default lease: no longer than any ttlMs may be (capabilities.maxTtlMs), which keeps it in timer range too.
  if (settings.lockExpirationMs > MAX_TTL_MS)
    throw new InvalidArgumentError(
      'lockExpirationMs',
      `${settings.lockExpirationMs} ms is above the longest lease, ${MAX_TTL_MS} ms (7 days)`,
    );
  if (settings.lockExpirationMs < 3 * settings.pingIntervalMs) {
    throw new InvalidArgumentError('lockExpirationMs', `must be at least 3 ping intervals (${3 * settings.pingIntervalMs} ms)`);
  }
  return settings;
}
