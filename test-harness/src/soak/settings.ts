import { SOAK_MODES, type SoakMode } from './holding.js';
import { isSoakTarget, type SoakTarget } from './soak-server.js';

export interface SoakSettings {
  readonly backend: SoakTarget;
  /** What each turn takes: a plain lock, a reader or writer of a read-write lock, or 2-3 keys at once. */
  readonly mode: SoakMode;
  readonly workers: number;
  readonly keys: number;
  readonly grants: number;
  readonly ttlMs: number;
  /** Each pause lasts a random time in this range, in ms: longer than the TTL so that it bites. */
  readonly pauseMs: readonly [number, number];
  /** A new pause starts this often, in ms. */
  readonly pauseEveryMs: number;
  /**
   * How long each holding lasts at least, in ms, between its first and second write (0: only the
   * store's round trips). On a slow backend most of a turn is the wait for the grant, and pauses
   * land there; a hold of its own puts them inside holds too.
   */
  readonly holdMs: number;
  /** Gives up (and reports what it has) after this long. */
  readonly maxSeconds: number;
  /** URL options added to (or replacing) the backend's defaults, such as `mode=session` for PostgreSQL. */
  readonly urlOptions: string;
}

interface BackendDefaults {
  readonly ttlMs: number;
  readonly pauseMs: readonly [number, number];
  readonly pauseEveryMs: number;
  /** URL options for short windows and a key space of the soak's own. */
  readonly urlOptions: string;
  readonly workers?: number;
  readonly keys?: number;
}

const REDIS_DEFAULTS: BackendDefaults = { ttlMs: 1000, pauseMs: [1200, 3000], pauseEveryMs: 600, urlOptions: '' };

export const BACKEND_DEFAULTS: Record<SoakTarget, BackendDefaults> = {
  redis: REDIS_DEFAULTS,
  // The topologies' workers are paused, not their servers: the same windows as one server.
  'redis-quorum': REDIS_DEFAULTS,
  'redis-cluster': REDIS_DEFAULTS,
  'redis-sentinel': REDIS_DEFAULTS,
  // 10 s is Consul's smallest session TTL; the server frees a lapsed session within 2 x TTL, then lock-delay.
  consul: { ttlMs: 10_000, pauseMs: [12_000, 25_000], pauseEveryMs: 6000, urlOptions: 'lockDelay=1s&prefix=holdfast-soak' },
  // Pauses up to 6.5 s straddle the 5 s after which a grab in progress is judged abandoned.
  mongodb: {
    ttlMs: 2000,
    pauseMs: [2500, 6500],
    pauseEveryMs: 4000,
    // A paused holder blocks its key for seconds here: more keys keep the others busy.
    workers: 6,
    keys: 8,
    urlOptions: 'holdfastPingInterval=250ms&holdfastLockExpiration=2s&holdfastPollInterval=250ms',
  },
  postgres: { ttlMs: 1000, pauseMs: [1200, 3000], pauseEveryMs: 600, urlOptions: '' },
  mysql: { ttlMs: 1000, pauseMs: [1200, 3000], pauseEveryMs: 600, urlOptions: '' },
  // 2 s is etcd's smallest lease TTL with its default election timeout; lapsed leases go within ~0.5 s.
  etcd: { ttlMs: 2000, pauseMs: [2500, 5000], pauseEveryMs: 3000, urlOptions: 'prefix=holdfast-soak' },
  // A holder's session lives 2 s without heartbeats (ZooKeeper's server expires it then); pauses straddle that.
  zookeeper: { ttlMs: 2000, pauseMs: [2500, 5000], pauseEveryMs: 3000, urlOptions: 'sessionTimeout=2s' },
};

const USAGE =
  'usage: npm run soak -- <redis|redis-quorum|redis-cluster|redis-sentinel|consul|mongodb|postgres|mysql|etcd|zookeeper|memory> [--mode lock|read-write|multi-key] [--workers N] [--keys K] [--grants M] [--ttl-ms T] [--pause-ms A-B] [--pause-every-ms P] [--hold-ms H] [--max-seconds S] [--url-options a=b&c=d]';

/** Parses the command line; returns a reason to skip for backends that are not cross-process. */
export function parseSoakArgs(argv: readonly string[]): SoakSettings | { skip: string } {
  const [backend, ...rest] = argv;
  if (backend === 'memory') return { skip: 'the memory backend is not shared between processes: nothing to soak' };
  if (!isSoakTarget(backend)) throw new Error(USAGE);
  const defaults = BACKEND_DEFAULTS[backend];
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const name = rest[i]!;
    const value = rest[i + 1];
    if (!name.startsWith('--') || value === undefined) throw new Error(`${USAGE}\n(bad argument "${name}")`);
    flags.set(name.slice(2), value);
  }
  const int = (name: string, fallback: number): number => {
    const text = flags.get(name);
    flags.delete(name);
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer, got "${text}"`);
    return value;
  };
  const modeText = flags.get('mode') ?? 'lock';
  flags.delete('mode');
  if (!(SOAK_MODES as readonly string[]).includes(modeText))
    throw new Error(`--mode must be one of ${SOAK_MODES.join(', ')}, got "${modeText}"`);
  const pauseText = flags.get('pause-ms');
  flags.delete('pause-ms');
  let pauseMs = defaults.pauseMs;
  if (pauseText !== undefined) {
    const match = /^(\d+)-(\d+)$/.exec(pauseText);
    if (!match || Number(match[1]) > Number(match[2])) throw new Error(`--pause-ms must look like 1200-3000, got "${pauseText}"`);
    pauseMs = [Number(match[1]), Number(match[2])];
  }
  const settings: SoakSettings = {
    backend,
    mode: modeText as SoakMode,
    workers: int('workers', defaults.workers ?? 4),
    keys: int('keys', defaults.keys ?? 4),
    grants: int('grants', 10_000),
    ttlMs: int('ttl-ms', defaults.ttlMs),
    pauseMs,
    pauseEveryMs: int('pause-every-ms', defaults.pauseEveryMs),
    holdMs: flags.has('hold-ms') ? int('hold-ms', 1) : 0,
    maxSeconds: int('max-seconds', 900),
    urlOptions: flags.get('url-options') ?? '',
  };
  flags.delete('url-options');
  if (flags.size > 0) throw new Error(`${USAGE}\n(unknown option --${[...flags.keys()][0]})`);
  return settings;
}
