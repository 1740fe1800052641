import { createLockProvider } from '@holdfast/core';
import { defineConformanceSuite } from '@holdfast/test-harness';
import { freePort, startZookeeperEnsemble } from '@holdfast/test-harness/servers';
import { needLocalBinary } from '@holdfast/test-harness/servers/vitest';
import { afterAll, describe } from 'vitest';

const missing = await needLocalBinary('zookeeper');
const ensemble = missing ? null : await startZookeeperEnsemble(3);
afterAll(() => ensemble?.stop(), 60_000);

// Every provider knows all three members and connects to one of them at random: grants, watches
// and tokens cross members, as in production.
const url = ensemble && `${ensemble.url}/conformance?sessionTimeout=3s`;

describe.skipIf(!url)('zookeeper (3-member ensemble of our own)', () => {
  defineConformanceSuite({
    name: 'zookeeper (3-member ensemble)',
    createProvider: () => createLockProvider(url!),
    child: { url: url! },
    createUnreachableProvider: async () => createLockProvider(`zookeeper://127.0.0.1:${await freePort()}?sessionTimeout=3s`),
    // node-zookeeper-client reports no refused connection: the session's watchdog does, about 2 s
    // into the 3 s session here, which left no room under the default bound (slack + 500 ms).
    unreachableFailsWithinMs: 3000,
    // The proxy cases need one server address; the standalone target runs them, and
    // ensemble-faults.test.ts cuts, kills and pauses members of an ensemble.
    faults: { unsupported: 'three members behind one URL: the standalone target runs the proxy cases' },
    shortTtlMs: 3000,
    slackMs: 1500,
  });
});
