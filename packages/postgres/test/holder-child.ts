import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { within } from '@holdfast/test-harness/helpers';

/** How the child holds its key: a plain lock, a read-write lock's reader or writer, or a slot of a semaphore of limit N. */
export type ChildHold = 'plain' | 'read' | 'write' | `semaphore:${number}`;

// Takes the key in a child process (from the URL, as an app would), says so, and waits to be killed.
const CHILD = `import { createLockProvider } from '@holdfast/core';
const [url, key, hold] = process.argv.slice(1);
const provider = await createLockProvider(url);
const options = { ttlMs: 30000, waitMs: 10000 };
const lock = hold === 'plain' ? await provider.acquire(key, options)
  : hold.startsWith('semaphore:') ? await provider.semaphore(key, Number(hold.slice('semaphore:'.length))).acquire(options)
  : await provider.readWrite(key)[hold](options);
process.stdout.write('HELD ' + lock.token + '\\n');
setInterval(() => undefined, 1 << 30);`;

export interface HolderChild {
  readonly child: ChildProcess;
  /** The token of the child's grant. */
  readonly token: bigint;
  /** SIGKILLs the child and resolves once it exited. */
  kill(): Promise<void>;
}

/** A child process holding `key` with a 30 s TTL through the session-mode `url`; kill it in a finally. */
export async function holdInChild(url: string, key: string, hold: ChildHold = 'plain'): Promise<HolderChild> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, url, key, hold], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = once(child, 'exit');
  exited.catch(() => undefined);
  const kill = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await within(exited, 5000, 'the child exits');
  };
  try {
    const [line] = (await within(once(createInterface({ input: child.stdout! }), 'line'), 20_000, 'the child holds the key')) as [string];
    if (!/^HELD \d+$/.test(line)) throw new Error(`the child said ${line}`);
    return { child, token: BigInt(line.slice('HELD '.length)), kill };
  } catch (error) {
    await kill();
    throw error;
  }
}
