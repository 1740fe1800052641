import type { INestApplication, ModuleMetadata } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { afterEach } from 'vitest';
import { HoldfastModule } from '../src/index.js';

/**
 * Generous bound for one step through a Nest application (an HTTP round trip plus a lock round trip)
 * on a loaded 2-core machine.
 */
export const STEP_MS = 10_000;

/** The backends every file runs on: the in-process one, and Redis when its server could be started. */
export function backendsUnderTest(redisUrl: string | null): { name: string; url: string | null }[] {
  return [
    { name: 'memory', url: 'memory:' },
    { name: 'redis', url: redisUrl },
  ];
}

/** A promise with its resolve function: the tests await events, never sleeps. */
export interface Deferred<T = void> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Applications a file's tests start, closed after each test (a test that closes one itself is fine: close is idempotent here). */
const started = new Set<INestApplication>();
afterEach(async () => {
  await Promise.allSettled([...started].map((app) => app.close()));
  started.clear();
});

/** A Nest application from Nest's testing module, initialised; HoldfastModule.forRoot({ url }) unless `imports` says otherwise. */
export async function startApp(
  url: string | null,
  metadata: ModuleMetadata & { holdfast?: false },
  beforeInit?: (app: INestApplication) => void,
): Promise<INestApplication> {
  const { holdfast, ...rest } = metadata;
  const imports = holdfast === false ? (rest.imports ?? []) : [HoldfastModule.forRoot({ url: url! }), ...(rest.imports ?? [])];
  const moduleRef = await Test.createTestingModule({ ...rest, imports }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  started.add(app);
  beforeInit?.(app);
  await app.init();
  return app;
}

/** Closes the app and forgets it. */
export async function closeApp(app: INestApplication): Promise<void> {
  started.delete(app);
  await app.close();
}
