import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { expect, test } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { BackendError, BackendNeverAnsweredError, CHANNELS, ErrorCode, type LockEvent } from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

/** Collects the messages of one channel while `work` runs. */
async function heard<T>(name: string, work: () => Promise<T>): Promise<{ result: T; events: LockEvent[] }> {
  const events: LockEvent[] = [];
  const listener = (message: unknown): void => void events.push(message as LockEvent);
  subscribe(name, listener);
  try {
    return { result: await work(), events };
  } finally {
    unsubscribe(name, listener);
  }
}

test('a backend that never answered fails a waiting acquire at once, without waitMs too; waitForBackend retries it', async () => {
  const backend = new ScriptedBackend();
  backend.behaviour.tryGrant = 'fail';
  const provider = createProvider(backend, { pollIntervalMs: 10 });
  const started = performance.now();
  const failed = await provider.acquire('k').catch((error: unknown) => error);
  expect(failed).toMatchObject({ code: ErrorCode.Backend, message: /never answered/ });
  // Its own class (the CLI words the remedy as its flag), still a BackendError, with the bare failure.
  expect(failed).toBeInstanceOf(BackendNeverAnsweredError);
  expect(failed).toBeInstanceOf(BackendError);
  expect((failed as BackendNeverAnsweredError).failure).toBe(((failed as Error).cause as Error).message);
  expect(performance.now() - started).toBeLessThan(500);
  expect(backend.calls.filter((call) => call.operation === 'tryGrant')).toHaveLength(1);
  const waited = performance.now();
  await expect(provider.acquire('k', { waitMs: 300, waitForBackend: true })).rejects.toMatchObject({ code: ErrorCode.Backend });
  expect(performance.now() - waited).toBeGreaterThanOrEqual(290);
  expect(backend.calls.filter((call) => call.operation === 'tryGrant').length).toBeGreaterThan(3);
  await expect(provider.acquire('k', { waitForBackend: 'yes' as unknown as boolean })).rejects.toMatchObject({
    code: ErrorCode.InvalidArgument,
  });
  await provider.close();
});

test('clean-up answered without the server (the undo of a cut attempt) does not count as the backend answering', async () => {
  const backend = new ScriptedBackend();
  // Each attempt answers after the per-call timeout: cut, then landed late and undone.
  backend.behaviour.tryGrant = 'slow';
  backend.slowMs = 300;
  const provider = createProvider(backend, { pollIntervalMs: 10, callTimeoutMs: 100 });
  await expect(provider.acquire('k')).rejects.toMatchObject({ code: ErrorCode.Backend, message: /never answered/ });
  // The cut attempt is undone in the background; the scripted release answers at once.
  for (let waited = 0; backend.releases.length === 0 && waited < 2000; waited += 10) await new Promise((r) => setTimeout(r, 10));
  expect(backend.releases.length, 'the cut attempt was not undone').toBeGreaterThan(0);
  const started = performance.now();
  await expect(provider.acquire('k')).rejects.toMatchObject({ code: ErrorCode.Backend, message: /never answered/ });
  expect(performance.now() - started, 'a second acquire retried a backend that never answered').toBeLessThan(1000);
  await provider.close();
});

test('a waiting acquire retries a backend that answered before, and says so once per interval on the logger and the channel', async () => {
  const backend = new ScriptedBackend();
  const warnings: [Record<string, unknown>, string][] = [];
  const provider = createProvider(backend, {
    owner: 'me',
    pollIntervalMs: 10,
    logger: { warn: (fields, message) => void warnings.push([fields as Record<string, unknown>, message]) },
  });
  await (await provider.acquire('k', { waitMs: 0 })).release();
  backend.behaviour.tryGrant = 'fail';
  const { result, events } = await heard(CHANNELS.backendRetry, () =>
    provider.acquire('k', { waitMs: 400 }).then(
      () => 'granted',
      (error: { code: string }) => error.code,
    ),
  );
  expect(result).toBe(ErrorCode.Backend);
  const retries = backend.calls.filter((call) => call.operation === 'tryGrant').length - 1;
  expect(retries).toBeGreaterThan(3);
  // Many retries, one report: the interval is 10 s.
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ backend: 'scripted', owner: 'me', key: 'k', failures: 1, answeredBefore: true });
  expect(warnings.filter(([, message]) => /acquire of lock "k" is retrying/.test(message))).toHaveLength(1);
  await provider.close();
});
