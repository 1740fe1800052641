/**
 * Rejects when `work` takes longer than `ms`; the timer is cleared either way.
 *
 * Not core's call.signal, on purpose: it bounds the LISTEN connection (release-listener.ts), which
 * is opened outside any one call and shared by every waiter of the provider, so no caller's signal
 * may cut it; and node-postgres takes no AbortSignal (its connectionTimeoutMillis covers the connect,
 * nothing covers the LISTEN query).
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
