import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ErrorCode, type LockProvider } from '@holdfast/core';
import { within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterEach, describe, expect, test } from 'vitest';
import { createConsulProvider } from '../src/index.js';

const consul = await useBackend('consul');

/**
 * An HTTP proxy in front of the real agent that answers the next `refusals` session creates the way
 * a just-started agent does before its node is registered, and forwards everything else.
 */
async function notYetRegistered(agentUrl: string): Promise<{ url: string; refusals: number; refused: number; close(): Promise<void> }> {
  const agent = new URL(agentUrl);
  const state = { refusals: 0, refused: 0 };
  const server: Server = createServer((incoming, outgoing) => {
    if (incoming.method === 'PUT' && incoming.url?.startsWith('/v1/session/create') && state.refusals > 0) {
      state.refusals--;
      state.refused++;
      incoming.resume();
      outgoing.writeHead(500, { 'Content-Type': 'text/plain' }).end('apply failed: Missing node registration');
      return;
    }
    const forwarded = request(
      { host: agent.hostname, port: agent.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => outgoing.destroy());
    incoming.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get refusals() {
      return state.refusals;
    },
    set refusals(n: number) {
      state.refusals = n;
    },
    get refused() {
      return state.refused;
    },
    close: () =>
      new Promise<void>((resolve) => server.close(() => resolve())).then(
        () => undefined,
        () => undefined,
      ),
  };
}

describe.skipIf(!consul.url)('"Missing node registration" (a just-started agent) is transient', () => {
  const providers: LockProvider[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(providers.splice(0).map((p) => p.close()));
    await Promise.all(closers.splice(0).map((close) => close()));
  });
  const setup = async (
    sessionMode: 'shared' | 'per-lock',
    callTimeoutMs: number,
  ): Promise<{ proxy: Awaited<ReturnType<typeof notYetRegistered>>; locks: LockProvider }> => {
    const proxy = await notYetRegistered(consul.url!.replace('consul://', 'http://'));
    closers.push(() => proxy.close());
    const locks = createConsulProvider({
      url: proxy.url,
      prefix: `holdfast-noreg-${sessionMode}`,
      lockDelayMs: 1000,
      sessionMode,
      callTimeoutMs,
    });
    providers.push(locks);
    return { proxy, locks };
  };

  for (const sessionMode of ['shared', 'per-lock'] as const) {
    test(`session=${sessionMode}: tryAcquire retries the session create within its call bound and gets the lock`, async () => {
      const { proxy, locks } = await setup(sessionMode, 5000);
      proxy.refusals = 5;
      const lock = await within(locks.tryAcquire(`k-${sessionMode}`), 6000, 'tryAcquire');
      expect(lock).not.toBeNull();
      expect(proxy.refused).toBe(5);
      await lock!.release();
    });
  }

  test('an agent that never gets registered: BackendError at the per-call timeout, with the reason', async () => {
    const { proxy, locks } = await setup('per-lock', 1000);
    proxy.refusals = Number.MAX_SAFE_INTEGER;
    const started = Date.now();
    const error = await within(
      locks.tryAcquire('never').catch((e: unknown) => e),
      5000,
      'tryAcquire',
    );
    const ms = Date.now() - started;
    expect(error).toMatchObject({ code: ErrorCode.Backend });
    expect(String((error as Error).message) + String((error as { cause?: Error }).cause?.message)).toMatch(
      /Missing node registration|no answer/i,
    );
    expect(proxy.refused).toBeGreaterThan(3);
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(2000);
  });
});
