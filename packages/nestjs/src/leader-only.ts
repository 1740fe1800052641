import { type RunExclusiveOptions, runExclusive } from '@holdfast/core';
import { runWithLock } from './current-lock.js';
import { providerOf, replaceMethod } from './decorated-method.js';
import { compileKeyTemplate, type KeyTemplate } from './key-template.js';

/** runExclusive's options without the signal: a scheduler calls the method with none. */
export type LeaderOnlyOptions = Omit<RunExclusiveOptions, 'signal'>;

/**
 * For scheduled work (`@Cron`, `@Interval` of `@nestjs/schedule`, or any timer running on every
 * instance): each call runs the method only on the instance that takes `key` for that run, and
 * resolves to undefined, without an error, on the others. Built on core's runExclusive (one attempt
 * per run, ShedLock's model), not on an election: a scheduled run is a discrete job, so nothing is
 * held or renewed between runs, an instance that dies loses nothing but its own run, and
 * `atLeastFor` keeps an instance whose clock is a little behind from running the same tick again.
 * Inside, `currentLock()` is the run's lock. A failed backend rejects (a BackendError): a run that
 * could not be coordinated is not silently counted as "another instance ran it".
 */
export function LeaderOnly(key: KeyTemplate, options: LeaderOnlyOptions = {}): MethodDecorator {
  const buildKey = compileKeyTemplate(key);
  return (prototype, name, descriptor) =>
    replaceMethod('LeaderOnly', prototype, name, descriptor, (original) => {
      const reason = options.reason ?? `${prototype.constructor.name}.${String(name)}`;
      return async function (this: unknown, ...args: unknown[]) {
        const provider = providerOf(this, 'LeaderOnly', name);
        const result = await runExclusive(
          provider,
          buildKey(args),
          (_signal, lock) => runWithLock(lock, () => original.apply(this, args)),
          {
            ...options,
            reason,
          },
        );
        return result.ran ? result.value : undefined;
      };
    }) as never;
}
