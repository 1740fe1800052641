import { until, within } from '@holdfast/test-harness/helpers';
import { describe, expect, test } from 'vitest';
import { createRedisProvider } from '../src/index.js';
import { RELEASE } from '../src/scripts.js';
import { providersClosedAfterEach, serverWithAdmin } from './fixture.js';

// A script the server does not know yet (a restart, SCRIPT FLUSH) is sent as EVALSHA, then, on
// NOSCRIPT, as EVAL one round trip later. An attempt abandoned meanwhile (abort, deadline) is undone
// by an owner-checked release: sent at once, it ran before the late EVAL, which then granted the key
// to nobody for its whole lease.

const { server, admin } = await serverWithAdmin();

const { providers } = providersClosedAfterEach(() => admin?.call('CLIENT', 'UNPAUSE'));

/** CLIENT PAUSE WRITE holds every EVALSHA; CLIENT LIST shows a connection whose EVALSHA is held. */
async function evalshaHeld(): Promise<boolean> {
  const clients = String(await admin!.call('CLIENT', 'LIST')).split('\n');
  return clients.some((line) => / flags=\S*b\S* /.test(line) && / cmd=evalsha /.test(line));
}

async function evalCalls(): Promise<number> {
  const line = (await admin!.info('commandstats')).split('\n').find((entry) => entry.startsWith('cmdstat_eval:'));
  return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
}

describe.skipIf(!server)('an attempt abandoned while the server loads its script', { timeout: 30_000 }, () => {
  for (const mode of ['tryAcquire', 'acquire'] as const) {
    test(`${mode}: the undo runs after the late EVAL, so the key is not left held by nobody`, async () => {
      const provider = createRedisProvider({ url: server!.url, pollIntervalMs: 60_000 });
      providers.push(provider);
      const key = `late-script-load/${mode}`;
      await provider.inspect(key);
      // The release script is known to the server, the grant script is not (loaded later by EVAL).
      await admin!.script('FLUSH');
      await RELEASE.load(admin!);
      await admin!.config('RESETSTAT');
      await admin!.call('CLIENT', 'PAUSE', '10000', 'WRITE');
      const abort = new AbortController();
      const options = { ttlMs: 20_000, signal: abort.signal };
      const attempt = (
        mode === 'tryAcquire' ? provider.tryAcquire(key, options) : provider.acquire(key, { ...options, waitMs: 10_000 })
      ).catch((error: unknown) => error);
      await until(evalshaHeld, 5000, 'the grant script is held by the pause');
      abort.abort(new Error('the caller gave up'));
      expect(await within(attempt, 2000, 'the attempt rejects'), 'with the abort').toMatchObject({ code: 'HOLDFAST_ABORTED' });
      await admin!.call('CLIENT', 'UNPAUSE');
      await until(async () => (await evalCalls()) > 0, 3000, 'the grant script, unknown to the server, is sent again as EVAL');
      expect(await admin!.hexists(`{holdfast:${key}}//fence`, 'fence'), 'the late EVAL granted the key (its token was drawn)').toBe(1);
      await until(async () => (await admin!.exists(`holdfast:${key}`)) === 0, 3000, 'the late grant is undone');
    });
  }
});
