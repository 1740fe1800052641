export const USAGE = `holdfast: distributed locks from the command line

usage:
  holdfast demo    [--backend URL] [--workers N] [--keys K] [--seconds S]
  holdfast run     [--backend URL] [--wait D] [--ttl D] [--grace D] [--reason TEXT] <key> -- <command...>
  holdfast inspect [--backend URL] [--json] <key>

  --backend URL   memory: (default, or $HOLDFAST_URL), redis://..., consul://..., mongodb://...
  durations (D)   500ms, 15s, 2m

exit codes:
  run:  the command's own code; ${'75'} when the lock could not be had in time; 69 when the backend failed
  all:  2 for bad usage; demo: 1 when any mutual-exclusion or fencing violation was seen
`;

export const EXIT = { usage: 2, violation: 1, lockUnavailable: 75, backendFailed: 69 } as const;

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {}
