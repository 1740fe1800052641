import type { Lock, LockProvider } from '@holdfast/core';
import { codeOf } from '@holdfast/test-harness/helpers';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { createPostgresProvider, type PostgresProviderOptions } from '../src/index.js';

/**
 * What the session-mode test files share, set up inside their describe block: providers in session
 * mode (closed after the file), an admin connection beside them, and the session URL a child process
 * connects with.
 */
export function sessionModeFixture(url: string) {
  const sessionUrl = new URL(url);
  sessionUrl.searchParams.set('mode', 'session');
  const providers: LockProvider[] = [];
  /** Closes `provider` after the file (one the test built otherwise, such as a lease-mode provider). */
  const closedAfterAll = (provider: LockProvider): LockProvider => {
    providers.push(provider);
    return provider;
  };
  const open = (options: Omit<PostgresProviderOptions, 'mode'> = { url }): LockProvider =>
    closedAfterAll(createPostgresProvider({ mode: 'session', ...options }));
  const admin = new pg.Client({ connectionString: url });
  // Connected by beforeAll, not here: a file whose tests are all filtered out runs no afterAll to end it.
  let connected!: () => void;
  const adminReady = new Promise<void>((resolve) => (connected = resolve));
  beforeAll(async () => {
    await admin.connect();
    connected();
  });
  afterAll(async () => {
    await Promise.allSettled(providers.map((provider) => provider.close()));
    await admin.end();
  });
  /** Ends the server processes of the connections of `applicationName`, as a crash of their host would. */
  const endConnectionsOf = async (applicationName: string): Promise<void> => {
    await adminReady;
    await admin.query('SELECT pg_terminate_backend(pid, 1000) FROM pg_stat_activity WHERE application_name = $1', [applicationName]);
  };
  return { sessionUrl: sessionUrl.href, open, closedAfterAll, admin, adminReady, endConnectionsOf };
}

/** 'granted' (then released), null when busy, or the error's code. */
export async function outcome(attempt: Promise<Lock | null>): Promise<string | null> {
  try {
    const lock = await attempt;
    if (lock === null) return null;
    await lock.release();
    return 'granted';
  } catch (error) {
    return codeOf(error);
  }
}
