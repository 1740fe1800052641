import { createLockProvider } from '@holdfast/core';
import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');

// A 1 s lock-delay keeps the expiry cases short (Consul's default is 15 s).
const url = consul.url && `${consul.url}?lockDelay=1s&prefix=holdfast-test`;

describe.skipIf(!url)(`consul (${consul.label})`, () => {
  defineConformanceSuite({
    name: 'consul (dev agent)',
    createProvider: () => createLockProvider(url!),
    child: { url: url! },
    // A closed port: connection refused at once, no retry timers.
    createUnreachableProvider: async () => createConsulProvider({ url: `http://127.0.0.1:${await freePort()}`, lockDelayMs: 1000 }),
    // The agent's HTTP port; a provider at another address keeps the same lock-delay and prefix.
    faults: url
      ? { server: addressOf(url), createProviderAt: (address, bounds) => createLockProvider(urlAt(url, address), bounds) }
      : { unsupported: 'no consul agent' },
    // Told promptly but not first: a forced release has no lock-delay, and the holder's monitor and the
    // next candidate's blocking query are answered from the same index change; case 76 saw the next
    // term start first once in a CI rehearsal. The fence refuses the old term's writes meanwhile.
    forcedReleaseToldAtRenewal: {
      reason:
        "a holder learns another provider's forced release from its monitor's blocking query, answered from the same index change as the next candidate's",
    },
    // Consul's minimum session TTL.
    shortTtlMs: 10_000,
    promptWakeMs: 1500,
    slackMs: 2000,
  });
});
