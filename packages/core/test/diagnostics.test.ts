import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, expect, test } from 'vitest';
import { createProvider } from '../src/backend-index.js';
import { CHANNELS, type LockEvent } from '../src/index.js';
import { ScriptedBackend } from './fixtures/scripted-backend.js';

const seen: [string, LockEvent][] = [];
const listeners = Object.values(CHANNELS).map((name) => {
  const listener = (message: unknown): void => void seen.push([name, message as LockEvent]);
  subscribe(name, listener);
  return [name, listener] as const;
});
afterEach(() => void (seen.length = 0));
process.on('exit', () => {
  for (const [name, listener] of listeners) unsubscribe(name, listener);
});

test('the life cycle is published on diagnostics channels: acquire, wait, grant, renew, release', async () => {
  const provider = createProvider(new ScriptedBackend(), { owner: 'me', pollIntervalMs: 10 });
  const first = await provider.acquire('k', { ttlMs: 60 });
  const waiting = provider.acquire('k', { waitMs: 1000 });
  await expect.poll(() => seen.some(([name]) => name === CHANNELS.renew), { timeout: 1000, interval: 5 }).toBe(true);
  await first.release();
  const second = await waiting;
  await second.release();
  await provider.close();
  const names = seen.map(([name]) => name);
  expect(names.filter((name) => name === CHANNELS.acquire)).toHaveLength(2);
  expect(names).toContain(CHANNELS.wait);
  expect(names.filter((name) => name === CHANNELS.grant)).toHaveLength(2);
  expect(names.filter((name) => name === CHANNELS.release)).toHaveLength(2);
  const grant = seen.find(([name]) => name === CHANNELS.grant)![1];
  expect(grant).toMatchObject({ backend: 'scripted', owner: 'me', key: 'k', token: 1n });
  expect(typeof grant.waitedMs).toBe('number');
  const release = seen.find(([name]) => name === CHANNELS.release)![1];
  expect(release).toMatchObject({ confirmed: true });
  expect(release.heldMs as number).toBeGreaterThanOrEqual(0);
});

test('renewal failures and loss are published and go to the logger', async () => {
  const backend = new ScriptedBackend();
  const warnings: [object, string][] = [];
  const provider = createProvider(backend, { logger: { warn: (fields, message) => void warnings.push([fields, message]) } });
  const lock = await provider.acquire('k', { ttlMs: 200 });
  backend.behaviour.extend = 'fail';
  await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
  const names = seen.map(([name]) => name);
  expect(names).toContain(CHANNELS.renewFailed);
  expect(names).toContain(CHANNELS.lost);
  expect(warnings.map(([, message]) => message)).toEqual(
    expect.arrayContaining([expect.stringMatching(/renewal of lock "k" failed/), expect.stringMatching(/lock "k" was lost/)]),
  );
  backend.behaviour.extend = 'normal';
  await provider.close();
});
