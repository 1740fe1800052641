import type { AcquireOptions, Lock, LockProvider } from '@holdfast/core';
import { UsageError } from './usage.js';

/** What `holdfast run` holds while the command runs: one lock, a shared or exclusive grant, or several keys. */
export interface RunGrant {
  readonly signal: AbortSignal;
  /** HOLDFAST_LOCK_* for the command. */
  readonly env: Record<string, string>;
  /** For --verbose. */
  readonly description: string;
  release(): Promise<void>;
}

/** How a run takes its keys: `--shared` / `--exclusive` (a read-write lock) and `--key` (several keys). */
export interface RunMode {
  readonly keys: readonly string[];
  readonly shared: boolean;
  readonly exclusive: boolean;
}

/**
 * The keys from `--key` (repeatable; then every positional is the command) or the first positional.
 * A read-write grant is of one key: with several keys, --shared and --exclusive are usage errors.
 */
export function runMode(keyFlags: readonly string[] | undefined, positionals: string[], shared = false, exclusive = false): RunMode {
  if (shared && exclusive) throw new UsageError('--shared and --exclusive exclude each other');
  const keys = keyFlags && keyFlags.length > 0 ? [...keyFlags] : positionals.splice(0, 1);
  if (keys.length === 0) throw new UsageError('run needs a key');
  if (keys.length > 1 && (shared || exclusive)) throw new UsageError('--shared and --exclusive take one key, not several');
  return { keys, shared, exclusive };
}

/** Waits for the grant the mode asks for (acquire's errors, LockTimeoutError included, pass through). */
export async function takeRunGrant(provider: LockProvider, mode: RunMode, options: AcquireOptions): Promise<RunGrant> {
  if (mode.keys.length > 1) {
    const all = await provider.acquireAll(mode.keys, options);
    const tokens = Object.fromEntries([...all.tokens].map(([key, token]) => [key, String(token)]));
    return {
      signal: all.signal,
      env: { HOLDFAST_LOCK_KEYS: all.keys.join(','), HOLDFAST_LOCK_TOKENS: JSON.stringify(tokens), HOLDFAST_LOCK_HELD: 'true' },
      description: all.keys.map((key) => `"${key}" with token ${all.tokens.get(key)}`).join(', '),
      release: () => all.release(),
    };
  }
  const key = mode.keys[0]!;
  const readWrite = mode.shared || mode.exclusive ? provider.readWrite(key) : undefined;
  const lock = !readWrite ? await provider.acquire(key, options) : await (mode.shared ? readWrite.read(options) : readWrite.write(options));
  const env = { HOLDFAST_LOCK_KEY: key, HOLDFAST_LOCK_TOKEN: String(lock.token), HOLDFAST_LOCK_HELD: 'true' };
  const how = mode.shared ? 'shared' : mode.exclusive ? 'exclusive' : undefined;
  return {
    signal: lock.signal,
    env: how ? { ...env, HOLDFAST_LOCK_MODE: how } : env,
    description: `"${key}"${how ? ` (${how})` : ''} with token ${lock.token}`,
    release: () => lock.release(),
  };
}

/** One plain lock as a run's grant (a scheduled job's). */
export function lockRunGrant(lock: Lock): RunGrant {
  return {
    signal: lock.signal,
    env: { HOLDFAST_LOCK_KEY: lock.key, HOLDFAST_LOCK_TOKEN: String(lock.token), HOLDFAST_LOCK_HELD: 'true' },
    description: `"${lock.key}" with token ${lock.token}`,
    release: () => lock.release(),
  };
}
