import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createMongoProvider } from '../src/index.js';
import { provider, SHORT_TTL_MS, testUrl, unreachableUrl } from './fixtures.js';

const mongodb = await useBackend('mongodb');

describe.skipIf(!mongodb.url)(`mongodb adapter (${mongodb.label})`, () => {
  const url = mongodb.url!;
  defineConformanceSuite({
    name: `mongodb (${mongodb.label})`,
    forcedReleaseToldAtRenewal: { reason: 'a holder learns a forced release at its next ping or renewal (docs/semantics-mongodb.md)' },
    createProvider: () => provider(url),
    child: { url: testUrl(url) },
    createUnreachableProvider: async () => createMongoProvider({ url: await unreachableUrl() }),
    faults: {
      server: addressOf(url),
      // directConnection: the driver must talk to the proxy's address, not to the host:port the server reports.
      createProviderAt: (address, bounds) => provider(withDirectConnection(urlAt(url, address)), bounds),
      // Longer than the 5 s after which the earlier latch design judged a grab abandoned: a regression to any such timeout is caught.
      stallMs: 7000,
    },
    // list() reads one cursor: the driver's first batch holds 101 documents, the rest come by getMore.
    listPageSize: 101,
    shortTtlMs: SHORT_TTL_MS,
    promptWakeMs: 1500,
    slackMs: 1500,
  });
});

function withDirectConnection(url: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('directConnection', 'true');
  return parsed.href;
}
