/**
 * Run by the conformance suite's leader-crash case: campaigns for the key in this process, prints
 * "LEADING <token>" once it leads, and waits to be killed. Never resigns by itself.
 */
import { childProvider, childSpec } from './child-provider.js';

const spec = childSpec();
const provider = await childProvider(spec, 'child-leader');
provider.elect(
  spec.key,
  async ({ token, signal }) => {
    process.stdout.write(`LEADING ${token}\n`);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  },
  { ttlMs: spec.ttlMs, reason: 'conformance leader crash case' },
);
setInterval(() => undefined, 1 << 30);
