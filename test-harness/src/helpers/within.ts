/** A description of what is awaited, named in the failure; a function when it should reflect the state at failure time. */
export type What = string | (() => string);

/** The text of a {@link What}. */
export function whatText(what: What): string {
  return typeof what === 'function' ? what() : what;
}

/**
 * `work`, or a rejection naming `what` once `ms` have passed: no await in a test can hang. The timer
 * is cleared as soon as `work` settles, so nothing is left running.
 */
export function within<T>(work: Promise<T>, ms: number, what: What): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${whatText(what)}: no answer within ${Math.round(ms)} ms`)), ms);
  });
  return Promise.race([work, timeUp]).finally(() => clearTimeout(timer));
}
