/** Awaits `work`, failing with a message that names the behaviour when it takes longer than `ms`. */
export function bounded<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${Math.round(ms)} ms`)), ms);
  });
  return Promise.race([work, timeUp]).finally(() => clearTimeout(timer));
}

/** Resolves once `check()` is true; rejects with `message` if it is still false after `withinMs`. */
export async function pollUntil(check: () => boolean, withinMs: number, message: () => string, everyMs = 10): Promise<number> {
  const start = performance.now();
  while (!check()) {
    if (performance.now() - start > withinMs) throw new Error(message());
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return performance.now() - start;
}

export interface Settled<T> {
  readonly value?: T;
  readonly error?: unknown;
  /** performance.now() when it settled. */
  readonly at: number;
}

/** Never rejects: the outcome and the moment it arrived. */
export function settle<T>(work: Promise<T>): Promise<Settled<T>> {
  return work.then(
    (value) => ({ value, at: performance.now() }),
    (error: unknown) => ({ error, at: performance.now() }),
  );
}

export function errorCode(error: unknown): string {
  if (error && typeof error === 'object' && 'code' in error) return String((error as { code: unknown }).code);
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
