type AnyFunction = (...args: unknown[]) => unknown;

/**
 * Records every timer created through the global timer functions until `stop()`, so a test can see
 * which ones are still pending. Unlike process.getActiveResourcesInfo(), it also sees unref'd timers.
 */
export function trackTimers(): { pending(): string[]; stop(): void } {
  const original = {
    setTimeout: globalThis.setTimeout,
    clearTimeout: globalThis.clearTimeout,
    setInterval: globalThis.setInterval,
    clearInterval: globalThis.clearInterval,
  };
  const live = new Map<unknown, string>();
  const creationSite = (): string => (new Error().stack ?? '').split('\n').slice(3, 7).join('\n');

  globalThis.setTimeout = ((fn: AnyFunction, ms?: number, ...args: unknown[]) => {
    const handle = original.setTimeout((...callArgs: unknown[]) => {
      live.delete(handle);
      fn(...callArgs);
    }, ms, ...args);
    live.set(handle, `setTimeout(${ms}) at\n${creationSite()}`);
    return handle;
  }) as typeof setTimeout;
  globalThis.setInterval = ((fn: AnyFunction, ms?: number, ...args: unknown[]) => {
    const handle = original.setInterval(fn, ms, ...args);
    live.set(handle, `setInterval(${ms}) at\n${creationSite()}`);
    return handle;
  }) as typeof setInterval;
  globalThis.clearTimeout = ((handle: NodeJS.Timeout | undefined) => {
    live.delete(handle);
    original.clearTimeout(handle);
  }) as typeof clearTimeout;
  globalThis.clearInterval = ((handle: NodeJS.Timeout | undefined) => {
    live.delete(handle);
    original.clearInterval(handle);
  }) as typeof clearInterval;

  return {
    pending: () => [...live.values()],
    stop: () => Object.assign(globalThis, original),
  };
}
