import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { CHANNELS, ErrorCode, type Lock, type LockEvent, type LockProvider } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
import { durationFlag, parsingFlags } from './options.js';
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
        wait: { type: 'string' },
        ttl: { type: 'string' },
        grace: { type: 'string' },
        reason: { type: 'string' },
        shell: { type: 'boolean' },
        'conflict-exit-code': { type: 'string' },
        verbose: { type: 'boolean', short: 'v' },
        quiet: { type: 'boolean', short: 'q' },
      },
    }),
  );
  const [key, ...words] = positionals;
  if (!key) throw new UsageError('run needs a key');
  if (words.length === 0) throw new UsageError('run needs a command after the key (holdfast run <key> -- <command...>)');
  if (values.shell && words.length !== 1)
    throw new UsageError('--shell takes the command as one string: holdfast run --shell <key> -- "a && b"');
  const command = values.shell ? ['/bin/sh', '-c', words[0]!] : words;
  const conflictExitCode = exitCodeFlag(values['conflict-exit-code']);
  const say = values.quiet ? () => undefined : (line: string) => console.error(`holdfast: ${line}`);
  const waitMs = durationFlag(values.wait, 'wait');
  const ttlMs = durationFlag(values.ttl, 'ttl');
  const graceMs = durationFlag(values.grace, 'grace') ?? 5000;

  const provider = await openProvider(backendUrl(values.backend));
  try {
    let lock: Lock;
    const reason = values.reason ?? `holdfast run ${words.join(' ')}`.slice(0, 1024);
    try {
      const announcement = announceWaiting(provider, key, waitMs, say, values.verbose);
      try {
        lock = await provider.acquire(key, { waitMs, ttlMs, reason });
      } finally {
        announcement.stop();
      }
    } catch (error) {
      if (exitCodeFor(error) === EXIT.lockUnavailable) {
        say(`lock "${key}" is held elsewhere; gave up after ${waitMs} ms`);
        return conflictExitCode ?? EXIT.lockUnavailable;
      }
      throw error;
    }
    if (values.verbose) say(`holding "${key}" with token ${lock.token}`);
    return await runHolding(lock, command, graceMs);
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
    if (event.owner !== provider.owner || event.key !== key) return;
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

function exitCodeFlag(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const code = Number(value);
  if (!Number.isInteger(code) || code < 0 || code > 255) throw new UsageError(`--conflict-exit-code must be 0-255, got "${value}"`);
  return code;
}

async function runHolding(lock: Lock, command: string[], graceMs: number): Promise<number> {
  const env = { ...process.env, HOLDFAST_LOCK_KEY: lock.key, HOLDFAST_LOCK_TOKEN: String(lock.token), HOLDFAST_LOCK_HELD: 'true' };
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
  await lock.release().catch((error: Error) => console.error(`holdfast: release failed: ${error.message}`));
  if ('error' in end) {
    console.error(`holdfast: could not run ${command[0]}: ${end.error}`);
    return 127;
  }
  if (lost) return EXIT.lockLost;
  if (end.signal) return 128 + (constants.signals[end.signal] ?? 0);
  return end.code ?? 0;
}
