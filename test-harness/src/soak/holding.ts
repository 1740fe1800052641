import type { LockProvider } from '@holdfast/core';

/** What the soak's workers take on each turn: a plain lock, a read-write grant, or several keys at once. */
export type SoakMode = 'lock' | 'read-write' | 'multi-key';

export const SOAK_MODES: readonly SoakMode[] = ['lock', 'read-write', 'multi-key'];

/** In read-write mode, the share of turns that ask for the exclusive (writer) grant; the rest read. */
export const WRITER_SHARE = 1 / 3;

/** One key of a holding, as the fenced store sees it. */
export interface HeldKey {
  readonly key: string;
  readonly token: bigint;
  readonly mode: 'shared' | 'exclusive';
}

/** What a worker holds for one turn: its keys with their tokens, one lost-lock signal, and the release. */
export interface Holding {
  readonly keys: readonly HeldKey[];
  readonly signal: AbortSignal;
  release(): Promise<void>;
}

interface TakeOptions {
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly reason: string;
}

/**
 * Takes one turn's holding on keys chosen at random from `keys`: one key (lock, reader or writer) or,
 * in multi-key mode, two or three distinct keys through `acquireAll`, so that workers' sets overlap in
 * every order and a deadlock would show as timeouts.
 */
export async function take(provider: LockProvider, mode: SoakMode, keys: readonly string[], options: TakeOptions): Promise<Holding> {
  if (mode === 'multi-key') {
    const chosen = pick(keys, Math.min(keys.length, 2 + Math.floor(Math.random() * 2)));
    const all = await provider.acquireAll(chosen, options);
    return {
      keys: all.keys.map((key) => ({ key, token: all.tokens.get(key)!, mode: 'exclusive' })),
      signal: all.signal,
      release: () => all.release(),
    };
  }
  const [key] = pick(keys, 1) as [string];
  if (mode === 'lock') {
    const lock = await provider.acquire(key, options);
    return { keys: [{ key, token: lock.token, mode: 'exclusive' }], signal: lock.signal, release: () => lock.release() };
  }
  const writer = Math.random() < WRITER_SHARE;
  const readWrite = provider.readWrite(key);
  const lock = writer ? await readWrite.write(options) : await readWrite.read(options);
  return {
    keys: [{ key, token: lock.token, mode: writer ? 'exclusive' : 'shared' }],
    signal: lock.signal,
    release: () => lock.release(),
  };
}

/** `count` distinct elements of `from`, at random. */
function pick(from: readonly string[], count: number): string[] {
  const rest = [...from];
  const chosen: string[] = [];
  while (chosen.length < count) chosen.push(rest.splice(Math.floor(Math.random() * rest.length), 1)[0]!);
  return chosen;
}
