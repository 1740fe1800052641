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
  // The creation site is captured cheaply (an Error) and only formatted for timers still pending.
  const live = new Map<unknown, { what: string; site: Error }>();
  const site = (stack: Error): string => (stack.stack ?? '').split('\n').slice(3, 7).join('\n');
  // Test runners raise the stack limit to 100 frames; 8 are enough to say where a timer came from.
  const capture = (): Error => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 8;
    const error = new Error();
    Error.stackTraceLimit = limit;
    return error;
  };

  globalThis.setTimeout = ((fn: AnyFunction, ms?: number, ...args: unknown[]) => {
    const handle = original.setTimeout(
      (...callArgs: unknown[]) => {
        live.delete(handle);
        fn(...callArgs);
      },
      ms,
      ...args,
    );
    live.set(handle, { what: `setTimeout(${ms})`, site: capture() });
    return handle;
  }) as typeof setTimeout;
  globalThis.setInterval = ((fn: AnyFunction, ms?: number, ...args: unknown[]) => {
    const handle = original.setInterval(fn, ms, ...args);
    live.set(handle, { what: `setInterval(${ms})`, site: capture() });
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
    pending: () => [...live.values()].map(({ what, site: stack }) => `${what} at\n${site(stack)}`),
    stop: () => Object.assign(globalThis, original),
  };
}
