/**
 * Run by the conformance suite's crash case: takes a lock in this process, prints "HELD <token>"
 * and waits to be killed. Never releases anything itself.
 */
import { pathToFileURL } from 'node:url';
import { createLockProvider, type LockProvider } from '@holdfast/core';

interface ChildSpec {
  url?: string;
  module?: string;
  key: string;
  ttlMs: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as ChildSpec;
let provider: LockProvider;
if (spec.url) {
  provider = await createLockProvider(spec.url);
} else if (spec.module) {
  const imported = (await import(pathToFileURL(spec.module).href)) as { createProvider(): Promise<LockProvider> | LockProvider };
  provider = await imported.createProvider();
} else {
  throw new Error('child-holder needs a url or a module');
}
const lock = await provider.acquire(spec.key, { ttlMs: spec.ttlMs, waitMs: 30_000, reason: 'conformance crash case' });
process.stdout.write(`HELD ${lock.token}\n`);
setInterval(() => undefined, 1 << 30);
