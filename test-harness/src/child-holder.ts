/**
 * Run by the conformance suite's crash case: takes a lock in this process, prints "HELD <token>"
 * and waits to be killed. Never releases anything itself.
 */
import { childProvider, childSpec } from './child-provider.js';

const spec = childSpec();
const provider = await childProvider(spec, 'child-holder');
const lock = await provider.acquire(spec.key, { ttlMs: spec.ttlMs, waitMs: 30_000, reason: 'conformance crash case' });
process.stdout.write(`HELD ${lock.token}\n`);
setInterval(() => undefined, 1 << 30);
