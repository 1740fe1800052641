import { parseArgs } from 'node:util';
import { constants } from 'node:os';
import { ErrorCode, type Lock } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
import { durationFlag, parsingFlags } from './options.js';
import { SupervisedCommand } from './supervised-command.js';
import { EXIT, UsageError, exitCodeFor } from './usage.js';

/**
 * `holdfast run <key> -- <command...>`, like `consul lock`: the command runs only while the lock is
 * held; if the lock is lost, or this runner dies, its process group gets SIGTERM, then SIGKILL
 * after the grace period.
 */
export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({ args, allowPositionals: true, strict: true, options: {
    backend: { type: 'string' },
    wait: { type: 'string' },
    ttl: { type: 'string' },
    grace: { type: 'string' },
    reason: { type: 'string' },
  } }),
  );
  const [key, ...command] = positionals;
  if (!key) throw new UsageError('run needs a key');
  if (command.length === 0) throw new UsageError('run needs a command after the key (holdfast run <key> -- <command...>)');
  const waitMs = durationFlag(values.wait, 'wait');
  const ttlMs = durationFlag(values.ttl, 'ttl');
  const graceMs = durationFlag(values.grace, 'grace') ?? 5000;

  const provider = await openProvider(backendUrl(values.backend));
  try {
    let lock: Lock;
    try {
      lock = await provider.acquire(key, { waitMs, ttlMs, reason: values.reason ?? `holdfast run ${command.join(' ')}`.slice(0, 1024) });
    } catch (error) {
      if (exitCodeFor(error) === EXIT.lockUnavailable) {
        console.error(`holdfast: lock "${key}" is held elsewhere; gave up after ${waitMs} ms`);
        return EXIT.lockUnavailable;
      }
      throw error;
    }
    return await runHolding(lock, command, graceMs);
  } finally {
    await provider.close();
  }
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
