import type { ManagedProcess } from './process.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `ready` until it returns true. Fails fast, with the server's output, if the process exits;
 * fails with the last probe error after timeoutMs.
 */
export async function waitUntilReady(proc: ManagedProcess, what: string, ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'not ready';
  for (;;) {
    if (proc.exited()) {
      throw new Error(`${proc.name} exited before ${what}:\n${proc.outputTail()}`);
    }
    try {
      if (await ready()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) {
      throw new Error(`${proc.name}: timed out after ${timeoutMs} ms waiting for ${what} (${lastError}):\n${proc.outputTail()}`);
    }
    await sleep(100);
  }
}

export async function pollUntil(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = 'condition false';
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${lastError})`);
    await sleep(100);
  }
}

/** waitUntilReady, stopping the process when it never gets ready; resolves with the process. */
export async function readyOrStopped(
  proc: ManagedProcess,
  what: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<ManagedProcess> {
  try {
    await waitUntilReady(proc, what, ready, timeoutMs);
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
