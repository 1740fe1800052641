import { type What, within } from './within.js';

/**
 * The reason `work` rejected with; rejects naming `what` if it resolved instead. It does not bound the
 * wait: pass a bounded promise (see {@link within}) when `work` could hang.
 */
export async function rejection(work: Promise<unknown>, what = 'the call'): Promise<unknown> {
  try {
    await work;
  } catch (error) {
    return error;
  }
  throw new Error(`${what}: expected it to reject, it resolved`);
}

/**
 * The `code` of an error (every Holdfast error carries an `ErrorCode`); for anything without one, a
 * description of it, so a failed `expect(codeOf(error)).toBe(ErrorCode.Lost)` shows what arrived instead.
 */
export function codeOf(error: unknown): string {
  if (error !== null && typeof error === 'object' && 'code' in error) return String((error as { code: unknown }).code);
  if (error instanceof Error) return `${error.name} without a code: ${error.message}`;
  return `not an error: ${String(error)}`;
}

/** How a promise settled, and when. */
export interface Settled<T> {
  readonly value?: T;
  readonly error?: unknown;
  /** performance.now() when it settled. */
  readonly at: number;
}

/** Never rejects: the outcome of `work` and the moment it arrived. It does not bound the wait (see {@link within}). */
export function settle<T>(work: Promise<T>): Promise<Settled<T>> {
  return work.then(
    (value) => ({ value, at: performance.now() }),
    (error: unknown) => ({ error, at: performance.now() }),
  );
}

/** The value of `fn()` and the milliseconds it took; rejects as `fn()` does. */
export async function elapsed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - started };
}

/** How a bounded call settled and how long it took. */
export interface Timed<T> {
  readonly ms: number;
  readonly value?: T;
  readonly error?: unknown;
}

/**
 * How `work` settled (value or error, never a rejection) and how long it took, for calls whose failure is
 * the point of the test; rejects naming `what` only if it has not settled within `withinMs`.
 */
export async function timed<T>(work: Promise<T>, withinMs: number, what: What): Promise<Timed<T>> {
  const started = performance.now();
  const { value, error } = await within(settle(work), withinMs, what);
  return { ms: performance.now() - started, value, error };
}
