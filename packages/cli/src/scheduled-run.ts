import { type LockProvider, runExclusive } from '@holdfast/core';
import { runHolding } from './run.js';
import { lockRunGrant } from './run-grant.js';
import { EXIT } from './usage.js';

export interface ScheduledRun {
  readonly atLeastMs: number | undefined;
  readonly atMostMs: number | undefined;
  readonly ttlMs: number | undefined;
  readonly waitMs: number | undefined;
  readonly graceMs: number;
  readonly say: (line: string) => void;
  readonly conflictExitCode: number | undefined;
  readonly values: {
    readonly reason?: string | undefined;
    readonly verbose?: boolean | undefined;
    readonly 'wait-for-backend'?: boolean | undefined;
  };
}

/**
 * `holdfast run --at-least D --at-most D`: a scheduled job (cron) on one instance at a time, as
 * runExclusive runs it. Busy means another instance runs it now: skipped (exit 75, or
 * --conflict-exit-code) unless --wait. The command is stopped at --at-most; after it ends, the lock
 * stays until --at-least from the start, on its lease, while this process exits.
 */
export async function runScheduled(provider: LockProvider, key: string, command: string[], run: ScheduledRun): Promise<number> {
  const reason = run.values.reason ?? `holdfast run ${command.join(' ')}`.slice(0, 1024);
  const outcome = await runExclusive(provider, key, (_signal, lock) => runHolding(lockRunGrant(lock), command, run.graceMs, false), {
    ...(run.atMostMs === undefined ? {} : { atMostFor: run.atMostMs }),
    ...(run.atLeastMs === undefined ? {} : { atLeastFor: run.atLeastMs }),
    ...(run.ttlMs === undefined ? {} : { ttlMs: run.ttlMs }),
    waitMs: run.waitMs ?? 0,
    waitForBackend: run.values['wait-for-backend'] === true,
    reason,
  });
  if (!outcome.ran) {
    run.say(`lock "${key}" is held elsewhere: the job runs there; skipped`);
    return run.conflictExitCode ?? EXIT.lockUnavailable;
  }
  if (run.values.verbose) run.say(`ran "${key}" with token ${outcome.token}`);
  return outcome.value;
}
