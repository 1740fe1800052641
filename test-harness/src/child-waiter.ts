/**
 * Run by the conformance suite's dead-waiter cases (64; 97 waits to write): waits for a key another process holds, prints
 * "WAITING" once core reports the wait (a queued backend has then asked for its place), and waits
 * to be killed. Prints "HELD <token>" if it is granted before that (the case then fails).
 */
import { subscribe } from 'node:diagnostics_channel';
import { CHANNELS, type LockEvent } from '@holdfast/core';
import { childProvider, childSpec } from './child-provider.js';

const spec = childSpec();
const provider = await childProvider(spec, 'child-waiter');
subscribe(CHANNELS.wait, (message) => {
  if ((message as LockEvent).key === spec.key) process.stdout.write('WAITING\n');
});
const options = { ttlMs: spec.ttlMs, waitMs: 60_000, reason: 'conformance dead waiter case' };
const lock = spec.mode === 'exclusive' ? await provider.readWrite(spec.key).write(options) : await provider.acquire(spec.key, options);
process.stdout.write(`HELD ${lock.token}\n`);
setInterval(() => undefined, 1 << 30);
