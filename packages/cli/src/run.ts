import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { constants } from 'node:os';
import { ErrorCode, createLockProvider, isHoldfastError } from '@holdfast/core';
import { durationFlag, parsingFlags } from './options.js';
import { EXIT, UsageError } from './usage.js';

/**
 * `holdfast run <key> -- <command...>`, like `consul lock`: the command runs only while the lock is
 * held; if the lock is lost it gets SIGTERM, then SIGKILL after the grace period.
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

  const provider = await createLockProvider(values.backend);
  try {
    let lock;
    try {
      lock = await provider.acquire(key, { waitMs, ttlMs, reason: values.reason ?? `holdfast run ${command.join(' ')}`.slice(0, 1024) });
    } catch (error) {
      if (isHoldfastError(error, ErrorCode.Timeout)) {
        console.error(`holdfast: lock "${key}" is held elsewhere; gave up after ${waitMs} ms`);
        return EXIT.lockUnavailable;
      }
      if (isHoldfastError(error, ErrorCode.InvalidArgument)) throw new UsageError((error as Error).message);
      console.error(`holdfast: ${(error as Error).message}`);
      return EXIT.backendFailed;
    }
    const child = spawn(command[0]!, command.slice(1), {
      stdio: 'inherit',
      env: { ...process.env, HOLDFAST_LOCK_KEY: key, HOLDFAST_LOCK_TOKEN: String(lock.token), HOLDFAST_LOCK_HELD: 'true' },
    });
    const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    let killTimer: NodeJS.Timeout | undefined;
    lock.signal.addEventListener('abort', () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if ((lock.signal.reason as { code?: string }).code !== ErrorCode.Lost) return;
      console.error(`holdfast: ${(lock.signal.reason as Error).message}; stopping the command`);
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    });
    const [code, signal] = (await once(child, 'exit').catch((error: Error) => {
      console.error(`holdfast: could not start ${command[0]}: ${error.message}`);
      return [127, null];
    })) as [number | null, NodeJS.Signals | null];
    clearTimeout(killTimer);
    process.off('SIGINT', forward).off('SIGTERM', forward);
    await lock.release().catch((error: Error) => console.error(`holdfast: release failed: ${error.message}`));
    if (signal) return 128 + (constants.signals[signal] ?? 0);
    return code ?? 0;
  } finally {
    await provider.close();
  }
}
