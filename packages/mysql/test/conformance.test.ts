import { defineConformanceSuite } from '@holdfast/test-harness';
import { addressOf, urlAt } from '@holdfast/test-harness/faults';
import { freePort } from '@holdfast/test-harness/servers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createMysqlProvider } from '../src/index.js';

const mysql = await useBackend('mysql');

describe.skipIf(!mysql.url)(`mysql (${mysql.label})`, () => {
  const url = mysql.url!;
  defineConformanceSuite({
    name: 'mysql (lease mode)',
    forcedReleaseToldAtRenewal: { reason: 'a holder learns a forced release at its next renewal (docs/semantics-mysql.md)' },
    createProvider: () => createMysqlProvider({ url }),
    child: { url },
    // A closed port: connection refused at once, so every operation fails fast.
    createUnreachableProvider: async () => createMysqlProvider({ url: urlAt(url, { host: '127.0.0.1', port: await freePort() }) }),
    faults: {
      server: addressOf(url),
      createProviderAt: (address, bounds) => createMysqlProvider({ url: urlAt(url, address), ...bounds }),
    },
    // list() is one SELECT, no pages: the listing case's least, 150 keys, checks each is listed once.
    listPageSize: 100,
    shortTtlMs: 600,
    promptWakeMs: 400,
    slackMs: 1000,
  });
});
