/** Resolves once `signal` aborts; rejects with `what` if it has not within `ms`. */
export function abortedWithin(signal: AbortSignal, ms: number, what: string): Promise<number> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(0);
    const timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve(Date.now() - started)), { once: true });
  });
}

/** Polls `check` every 50 ms until it returns true; rejects with `what` after `ms`. */
export async function eventually(what: string, check: () => Promise<boolean> | boolean, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `promise`, or a rejection naming `what` after `ms`: no await in a test can hang. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
