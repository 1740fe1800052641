import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createPostgresProvider } from '../src/index.js';

const postgres = await useBackend('postgres');

describe.skipIf(!postgres.url)(`postgres (${postgres.label})`, () => {
  const url = postgres.url!;
  defineConformanceSuite({
    name: 'postgres (lease mode)',
    createProvider: () => createPostgresProvider({ url }),
    // The holder hears a forced release by NOTIFY, and the same NOTIFY wakes the next candidate: under
    // load its grant can come first (seen in CI, case 76: a term started while the old one ran).
    forcedReleaseToldAtRenewal: {
      reason: "a holder's NOTIFY of a forced release races the waiter's grant; at the latest it learns at its next renewal",
    },
    child: { url },
    // A closed port: connection refused at once, so every operation fails fast.
    createUnreachableProvider: async () => createPostgresProvider({ url: urlAt(url, { host: '127.0.0.1', port: await freePort() }) }),
    faults: {
      server: addressOf(url),
      createProviderAt: (address, bounds) => createPostgresProvider({ url: urlAt(url, address), ...bounds }),
    },
    // list() is one SELECT, no pages: the listing case's least, 150 keys, checks each is listed once.
    listPageSize: 100,
    shortTtlMs: 600,
    promptWakeMs: 300,
    slackMs: 1000,
  });
});
