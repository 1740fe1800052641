import { createLockProvider } from '@holdfast/core';
import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';

const zookeeper = await useBackend('zookeeper');

// A 3 s session: a crashed or cut-off holder's node goes 3 s after the server last heard from it; 2 s
// would be quicker, but the silent-connection watchdog gives up after two thirds of it, and a loaded
// 2-core CI machine can stall a test process for a second.
const url = zookeeper.url && `${zookeeper.url}/conformance?sessionTimeout=3s`;

describe.skipIf(!url)(`zookeeper (${zookeeper.label})`, () => {
  defineConformanceSuite({
    name: 'zookeeper (standalone)',
    createProvider: () => createLockProvider(url!),
    child: { url: url! },
    // A closed port: connection refused at once, every call fails at its bound.
    createUnreachableProvider: async () => createLockProvider(`zookeeper://127.0.0.1:${await freePort()}?sessionTimeout=3s`),
    // node-zookeeper-client reports no refused connection: the session's watchdog does, about 2 s
    // into the 3 s session here, which left no room under the default bound (slack + 500 ms).
    unreachableFailsWithinMs: 3000,
    faults: url
      ? { server: addressOf(url), createProviderAt: (address, bounds) => createLockProvider(urlAt(url, address), bounds) }
      : { unsupported: 'no ZooKeeper server' },
    // The session timeout: a lock cannot lapse on a crash sooner.
    shortTtlMs: 3000,
    slackMs: 1500,
  });
});
