/** Resolves after `ms`, or rejects with the signal's reason once it aborts. Leaves no timer behind. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Resolves after `ms`, or as soon as `signal` aborts (never rejects); leaves nothing behind.
 * `keepAlive: false` lets the process exit during the pause (background clean-ups).
 */
export function pause(ms: number, signal: AbortSignal, keepAlive = true): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (!keepAlive) timer.unref();
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A controller aborted when any of `signals` aborts; `dispose()` detaches it from them. */
export function linkedController(...signals: (AbortSignal | undefined)[]): { controller: AbortController; dispose(): void } {
  const controller = new AbortController();
  const detachers: (() => void)[] = [];
  for (const signal of signals) {
    detachers.push(forwardAbort(signal, controller));
    if (controller.signal.aborted) break;
  }
  return {
    controller,
    dispose: () => {
      for (const detach of detachers) detach();
    },
  };
}

/** Aborts `controller` when `signal` does (at once if it has); the function returned detaches. */
export function forwardAbort(signal: AbortSignal | undefined, controller: AbortController): () => void {
  if (!signal) return () => undefined;
  if (signal.aborted) {
    controller.abort(signal.reason);
    return () => undefined;
  }
  const onAbort = (): void => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** Resolves once `signal` aborts (never rejects). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * Settles like `work`, or rejects as soon as `signal` aborts (with `toError(signal.reason)`). The
 * work itself goes on (a request already sent cannot be taken back); its outcome is then ignored,
 * so whoever abandons a grant this way must free it once `work` has settled.
 */
export function untilAborted<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  toError: (reason: unknown) => unknown = (reason) => reason,
): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(toError(signal.reason));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      work.catch(() => undefined);
      reject(toError(signal.reason));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
