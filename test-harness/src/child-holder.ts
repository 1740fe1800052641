/**
 * Run by the conformance suite's crash case: takes a lock in this process, prints "HELD <token>"
 * and waits to be killed. Never releases anything itself.
 */
import { childProvider, childSpec } from './child-provider.js';

const spec = childSpec();
const provider = await childProvider(spec, 'child-holder');
const options = { ttlMs: spec.ttlMs, waitMs: 30_000, reason: 'conformance crash case' };
const lock = spec.limit ? await provider.semaphore(spec.key, spec.limit).acquire(options) : await provider.acquire(spec.key, options);
process.stdout.write(`HELD ${lock.token}\n`);
setInterval(() => undefined, 1 << 30);
