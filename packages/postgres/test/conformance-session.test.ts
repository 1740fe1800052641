import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const postgres = await useBackend('postgres');

describe.skipIf(!postgres.url)(`postgres session mode (${postgres.label})`, () => {
  const url = postgres.url!;
  const sessionUrl = new URL(url);
  sessionUrl.searchParams.set('mode', 'session');
  defineConformanceSuite({
    name: 'postgres (session mode)',
    createProvider: () => createPostgresProvider({ url, mode: 'session' }),
    // The child processes (SIGKILL, SIGSTOP) build theirs from the URL: mode=session is in it.
    child: { url: sessionUrl.href },
    // A closed port: connection refused at once, so every operation fails fast.
    createUnreachableProvider: async () =>
      createPostgresProvider({ url: urlAt(url, { host: '127.0.0.1', port: await freePort() }), mode: 'session' }),
    faults: {
      server: addressOf(url),
      createProviderAt: (address, bounds) => createPostgresProvider({ url: urlAt(url, address), mode: 'session', ...bounds }),
    },
    // A dedicated server connection per held lock: the test server's max_connections (200) bounds them.
    heldLocksLimit: { max: 50, reason: 'session mode holds a server connection per lock' },
    shortTtlMs: 600,
    promptWakeMs: 300,
    slackMs: 1000,
  });
});
