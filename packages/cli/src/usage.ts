import { ErrorCode, isHoldfastError } from '@holdfast/core';

export const USAGE = `holdfast: distributed locks from the command line

usage:
  holdfast run     [--backend URL] [--wait D] [--ttl D] [--grace D] [--reason TEXT]
                   [--shell] [--wait-for-backend] [--at-least D] [--at-most D] [--conflict-exit-code N]
                   [--verbose | --quiet] [--shared | --exclusive] (<key> | --key K1 --key K2 ...) -- <command...>
  holdfast inspect [--backend URL] [--json] <key>
  holdfast list    [--backend URL] [--json] [prefix]
  holdfast watch   [--backend URL] [--interval D] [--once] [prefix]
  holdfast release --force [--backend URL] <key>
  holdfast demo    [--backend URL] [--workers N] [--keys K] [--seconds S]
  holdfast --version | holdfast <command> --help

  --backend URL   redis://..., consul://..., mongodb://..., or memory: (this process only);
                  default $HOLDFAST_URL. run, inspect, list, watch and release need one;
                  demo defaults to memory:
  durations (D)   500ms, 15s, 2m, 1h

exit codes:
  0   success (run: the command's own code, 128 + signal number if it was killed)
  1   demo saw a mutual-exclusion or fencing violation
  2   bad usage: unknown flag, bad duration, bad key, bad or missing backend URL
  69  the backend failed or is unreachable
  70  internal error (a bug: please report it)
  75  run: the lock stayed held elsewhere past --wait (or --conflict-exit-code N)
  76  run: the lock was lost while the command ran (the command was stopped)
`;

/** One exit-code table for every command. */
export const EXIT = {
  ok: 0,
  violation: 1,
  usage: 2,
  backendFailed: 69,
  internal: 70,
  lockUnavailable: 75,
  lockLost: 76,
} as const;

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {}

/** The exit code for an error that ended a command. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (!isHoldfastError(error)) return EXIT.internal;
  switch (error.code) {
    case ErrorCode.InvalidArgument:
    // A feature the chosen backend does not have (--shared where it has no read-write locks): a usage problem, not a failure.
    case ErrorCode.Unsupported:
      return EXIT.usage;
    case ErrorCode.Timeout:
      return EXIT.lockUnavailable;
    case ErrorCode.Lost:
      return EXIT.lockLost;
    default:
      return EXIT.backendFailed;
  }
}
