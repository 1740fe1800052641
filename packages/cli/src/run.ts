import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { CHANNELS, ErrorCode, type LockEvent, type LockProvider, redactUrl } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
import { durationFlag, parsingFlags } from './options.js';
import { type RunGrant, runMode, takeRunGrant } from './run-grant.js';
import { runScheduled } from './scheduled-run.js';
import { SupervisedCommand } from './supervised-command.js';
import { EXIT, exitCodeFor, UsageError } from './usage.js';

/**
 * `holdfast run <key> -- <command...>`, like `consul lock`: the command runs only while the lock is
 * held; if the lock is lost, or this runner dies, its process group gets SIGTERM, then SIGKILL
 * after the grace period.
 */
export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        backend: { type: 'string' },
        key: { type: 'string', multiple: true },
        shared: { type: 'boolean' },
        exclusive: { type: 'boolean' },
        wait: { type: 'string' },
        ttl: { type: 'string' },
        grace: { type: 'string' },
        reason: { type: 'string' },
        shell: { type: 'boolean' },
        'wait-for-backend': { type: 'boolean' },
        'at-least': { type: 'string' },
        'at-most': { type: 'string' },
        'conflict-exit-code': { type: 'string' },
        verbose: { type: 'boolean', short: 'v' },
        quiet: { type: 'boolean', short: 'q' },
      },
    }),
  );
  const words = [...positionals];
  const mode = runMode(values.key, words, values.shared, values.exclusive);
  const key = mode.keys.join(', ');
  if (words.length === 0) throw new UsageError('run needs a command after the key (holdfast run <key> -- <command...>)');
  if (values.shell && words.length !== 1)
    throw new UsageError('--shell takes the command as one string: holdfast run --shell <key> -- "a && b"');
  const command = values.shell ? ['/bin/sh', '-c', words[0]!] : words;
  const conflictExitCode = exitCodeFlag(values['conflict-exit-code']);
  const say = values.quiet ? () => undefined : (line: string) => console.error(`holdfast: ${line}`);
  const waitMs = durationFlag(values.wait, 'wait');
  const ttlMs = durationFlag(values.ttl, 'ttl');
  const graceMs = durationFlag(values.grace, 'grace') ?? 5000;

  const atLeastMs = durationFlag(values['at-least'], 'at-least');
  const atMostMs = durationFlag(values['at-most'], 'at-most');
  if (atMostMs !== undefined && ttlMs !== undefined) throw new UsageError('--at-most is the lease; give it or --ttl, not both');
  const scheduled = atLeastMs !== undefined || atMostMs !== undefined;
  if (scheduled && (mode.keys.length > 1 || mode.shared || mode.exclusive))
    throw new UsageError('--at-least and --at-most take one key, without --shared or --exclusive');
  const provider = await openProvider(backendUrl(values.backend));
  if (scheduled) {
    try {
      return await runScheduled(provider, key, command, { atLeastMs, atMostMs, ttlMs, waitMs, graceMs, say, conflictExitCode, values });
    } finally {
      await provider.close();
    }
  }
  try {
    let grant: RunGrant;
    const reason = values.reason ?? `holdfast run ${words.join(' ')}`.slice(0, 1024);
    try {
      const announcement = announceWaiting(provider, key, waitMs, say, values.verbose);
      const outages = announceRetries(provider, mode.keys, say);
      try {
        grant = await takeRunGrant(provider, mode, { waitMs, ttlMs, reason, waitForBackend: values['wait-for-backend'] === true });
      } finally {
        announcement.stop();
        outages.stop();
      }
    } catch (error) {
      if (exitCodeFor(error) === EXIT.lockUnavailable) {
        say(`lock "${key}" is held elsewhere; gave up after ${waitMs} ms`);
        return conflictExitCode ?? EXIT.lockUnavailable;
      }
      throw error;
    }
    if (values.verbose) say(`holding ${grant.description}`);
    return await runHolding(grant, command, graceMs, true);
  } finally {
    await provider.close();
  }
}

/** Says once on stderr (unless --quiet) that the key is busy and the run is waiting for it. */
function announceWaiting(
  provider: LockProvider,
  key: string,
  waitMs: number | undefined,
  say: (line: string) => void,
  verbose: boolean | undefined,
): { stop(): void } {
  const onWait = (message: unknown): void => {
    const event = message as LockEvent;
    if (event.owner !== provider.owner || !key.split(', ').includes(event.key)) return;
    const limit = waitMs === undefined ? '' : ` for up to ${waitMs} ms`;
    if (!verbose) {
      say(`waiting for lock "${key}"${limit}`);
      return;
    }
    void provider.inspect(key).then(
      (holder) =>
        say(`waiting for lock "${key}"${limit}${holder ? `, held by ${holder.owner} since ${holder.acquiredAt.toISOString()}` : ''}`),
      () => say(`waiting for lock "${key}"${limit}`),
    );
  };
  subscribe(CHANNELS.wait, onWait);
  return { stop: () => void unsubscribe(CHANNELS.wait, onWait) };
}

/** A waiting run that retries a failing backend says so on stderr (core limits it to once per interval). */
function announceRetries(provider: LockProvider, keys: readonly string[], say: (line: string) => void): { stop(): void } {
  const onRetry = (message: unknown): void => {
    const event = message as LockEvent;
    if (event.owner !== provider.owner || !keys.includes(event.key)) return;
    const error = event.error instanceof Error ? event.error.message : String(event.error);
    say(`the backend is not answering (${redactUrl(error)}); still trying for lock "${event.key}"`);
  };
  subscribe(CHANNELS.backendRetry, onRetry);
  return { stop: () => void unsubscribe(CHANNELS.backendRetry, onRetry) };
}

function exitCodeFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const code = Number(value);
  if (!Number.isInteger(code) || code < 0 || code > 255) throw new UsageError(`--conflict-exit-code must be 0-255, got "${value}"`);
  return code;
}

/** Runs the command while `lock` is held; `release: false` leaves the lock to its lease (a scheduled job's at-least). */
export async function runHolding(lock: RunGrant, command: string[], graceMs: number, release: boolean): Promise<number> {
  const env = { ...process.env, ...lock.env };
  const supervised = new SupervisedCommand(command, env, graceMs);
  const forward = (signal: NodeJS.Signals): void => supervised.forward(signal);
  process.on('SIGINT', forward).on('SIGTERM', forward).on('SIGHUP', forward);
  let lost = false;
  lock.signal.addEventListener('abort', () => {
    if ((lock.signal.reason as { code?: string }).code !== ErrorCode.Lost) return;
    lost = true;
    console.error(`holdfast: ${(lock.signal.reason as Error).message}; stopping the command`);
    supervised.stop();
  });
  const end = await supervised.ended;
  process.off('SIGINT', forward).off('SIGTERM', forward).off('SIGHUP', forward);
  if (release) await lock.release().catch((error: Error) => console.error(`holdfast: release failed: ${error.message}`));
  if ('error' in end) {
    console.error(`holdfast: could not run ${command[0]}: ${end.error}`);
    return 127;
  }
  if (lost) return EXIT.lockLost;
  if (end.signal) return 128 + (constants.signals[end.signal] ?? 0);
  return end.code ?? 0;
}
