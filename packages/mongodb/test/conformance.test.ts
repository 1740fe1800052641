import { defineConformanceSuite } from '@holdfast/test-harness';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { describe } from 'vitest';
import { createMongoProvider } from '../src/index.js';
import { SHORT_TTL_MS, provider, testUrl, unreachableUrl } from './fixtures.js';

const mongodb = await useBackend('mongodb');

describe.skipIf(!mongodb.url)(`mongodb adapter (${mongodb.label})`, () => {
  const url = mongodb.url!;
  defineConformanceSuite({
    name: `mongodb (${mongodb.label})`,
    createProvider: () => provider(url),
    child: { url: testUrl(url) },
    createUnreachableProvider: async () => createMongoProvider({ url: await unreachableUrl() }),
    shortTtlMs: SHORT_TTL_MS,
    promptWakeMs: 1500,
    slackMs: 1500,
  });
});
