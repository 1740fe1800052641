/**
 * Run by the conformance suite's "paused holder" fault case: takes a lock, prints "HELD <token>",
 * prints "LOST <code>" when its signal aborts, and on each "WRITE" line from stdin prints
 * "WRITE <token> <signal aborted 0|1>" for the parent to apply to its fenced resource. The parent
 * stops (SIGSTOP) and resumes (SIGCONT) this process, and kills it at the end.
 */
import { createInterface } from 'node:readline';
import { childProvider, childSpec } from '../child-provider.js';

const spec = childSpec();
const provider = await childProvider(spec, 'paused-holder');
const lock = await provider.acquire(spec.key, { ttlMs: spec.ttlMs, waitMs: 30_000, reason: 'conformance paused-holder case' });
lock.signal.addEventListener('abort', () => {
  const reason = lock.signal.reason as { code?: string } | undefined;
  process.stdout.write(`LOST ${reason?.code ?? 'unknown'}\n`);
});
process.stdout.write(`HELD ${lock.token}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() === 'WRITE') process.stdout.write(`WRITE ${lock.token} ${lock.signal.aborted ? 1 : 0}\n`);
});
