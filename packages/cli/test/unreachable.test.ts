import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLockProvider, ErrorCode } from '@holdfast/core';
import { type HungListener, hungListener } from '@holdfast/test-harness/faults';
import { codeOf, timed, within } from '@holdfast/test-harness/helpers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

/**
 * A backend that has never answered is reported at once (issue 27, item 1): a typo in the port must
 * not hang a caller that waits forever, in the library or through the CLI. Every network backend,
 * at a closed loopback port and at a listener that accepts and never answers.
 */
const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
const execFileAsync = promisify(execFile);

const URLS: Record<string, (port: number) => string> = {
  redis: (port) => `redis://127.0.0.1:${port}`,
  consul: (port) => `consul://127.0.0.1:${port}`,
  mongodb: (port) => `mongodb://127.0.0.1:${port}/holdfast?directConnection=true`,
  postgres: (port) => `postgres://holdfast@127.0.0.1:${port}/holdfast`,
  mysql: (port) => `mysql://holdfast@127.0.0.1:${port}/holdfast`,
};
/** The per-call timeout (default 5 s) bounds a silent server; the rest is slack for a loaded machine. */
const CALL_TIMEOUT_MS = 1000;
const BOUND_MS = CALL_TIMEOUT_MS + 4000;

let hung: HungListener;
let closedPort: number;
beforeAll(async () => {
  hung = await hungListener();
  closedPort = await freePort();
});
afterAll(async () => {
  await hung?.close();
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const place = (kind: 'closed' | 'hung'): number => (kind === 'closed' ? closedPort : hung.address.port);

async function cli(args: string[]): Promise<{ code: number; stderr: string; ms: number }> {
  const { HOLDFAST_URL: _ignored, ...env } = process.env;
  const started = performance.now();
  try {
    const { stderr } = await execFileAsync(process.execPath, [BIN, ...args], { env, timeout: 30_000 });
    return { code: 0, stderr, ms: performance.now() - started };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr, ms: performance.now() - started };
  }
}

describe.each(Object.keys(URLS))('%s that has never answered', { timeout: 30_000 }, (backend) => {
  describe.each(['closed', 'hung'] as const)('at a %s loopback port', (kind) => {
    test.concurrent('acquire without waitMs is a BackendError at once; waitForBackend retries until waitMs and says so', async () => {
      const warnings: string[] = [];
      const provider = await createLockProvider(`${URLS[backend]!(place(kind))}`, {
        callTimeoutMs: CALL_TIMEOUT_MS,
        closeTimeoutMs: 1000,
        logger: { warn: (_fields, message) => void warnings.push(message) },
      });
      try {
        const failed = await timed(provider.acquire('unreachable/forever'), BOUND_MS, 'acquire with no waitMs');
        expect(codeOf(failed.error)).toBe(ErrorCode.Backend);
        expect(String((failed.error as Error).message)).toMatch(/never answered/);
        expect(failed.ms).toBeLessThan(BOUND_MS);
        const waitMs = 1500;
        const waited = await timed(
          provider.acquire('unreachable/opted-in', { waitMs, waitForBackend: true }),
          waitMs + BOUND_MS,
          'acquire with waitForBackend',
        );
        expect(codeOf(waited.error)).toBe(ErrorCode.Backend);
        // It retried: it gave up at its deadline, not at the first failure.
        expect(waited.ms).toBeGreaterThanOrEqual(waitMs - 50);
        expect(warnings.filter((line) => line.includes('is retrying'))).toHaveLength(1);
      } finally {
        await within(provider.close(), BOUND_MS, 'close');
      }
    });

    test.concurrent('holdfast run exits 69 with the cause on stderr, without "waiting for lock"', async () => {
      const url = URLS[backend]!(place(kind));
      const result = await cli(['run', '--backend', url, 'unreachable/cli', '--', 'true']);
      expect(result.code).toBe(69);
      expect(result.stderr).toMatch(/never answered/);
      // The remedy as the CLI spells it, not the library option.
      expect(result.stderr).toMatch(/pass --wait-for-backend/);
      expect(result.stderr).not.toMatch(/waitForBackend/);
      expect(result.stderr).not.toMatch(/waiting for lock/);
      // The default per-call timeout (5 s) bounds a silent server, close() its own 5 s; node's start-up on a loaded machine is the rest.
      expect(result.ms, `holdfast run took ${Math.round(result.ms)} ms`).toBeLessThan(10_000 + BOUND_MS);
    });
  });
});
