import { BackendError } from '@holdfast/core';

/** The error a call gets when its signal aborts first; the signal's reason is the cause. */
export function abandoned(what: string, signal: AbortSignal): BackendError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
  return new BackendError('redis', `${what}: gave up waiting for the server (${reason})`, signal.reason);
}

/**
 * Settles like `work`, or rejects as soon as `signal` aborts. The work itself goes on (a command
 * already sent cannot be taken back); its outcome is then ignored.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, what: string): Promise<T> {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abandoned(what, signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      work.catch(() => undefined);
      reject(abandoned(what, signal));
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
