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
  // Renewed after 100 ms, lost only if no renewal succeeds for 270 ms: a loaded machine stalls tens of ms.
  const first = await provider.acquire('k', { ttlMs: 300 });
  const waiting = provider.acquire('k', { waitMs: 1000 });
  await expect.poll(() => seen.some(([name]) => name === CHANNELS.renew), { timeout: 5000, interval: 5 }).toBe(true);
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

test('every acquire ends on holdfast:acquire-end with its outcome, tied to its other messages by acquireId', async () => {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { owner: 'me', pollIntervalMs: 10, callTimeoutMs: 1000 });
  const held = await provider.acquire('k', { ttlMs: 10_000 });
  expect(await provider.tryAcquire('k')).toBeNull();
  await expect(provider.acquire('k', { waitMs: 30 })).rejects.toMatchObject({ code: 'HOLDFAST_TIMEOUT' });
  const cancel = new AbortController();
  const aborted = provider.acquire('k', { waitMs: 10_000, signal: cancel.signal });
  await expect.poll(() => seen.filter(([name]) => name === CHANNELS.wait).length, { timeout: 5000, interval: 5 }).toBe(2);
  cancel.abort();
  await expect(aborted).rejects.toMatchObject({ code: 'HOLDFAST_ABORTED' });
  await held.release();
  backend.behaviour.tryGrant = 'fail';
  await expect(provider.tryAcquire('other')).rejects.toMatchObject({ code: 'HOLDFAST_BACKEND' });
  backend.behaviour.tryGrant = 'normal';
  await provider.close();

  const ends = seen.filter(([name]) => name === CHANNELS.acquireEnd).map(([, event]) => event);
  expect(ends.map((event) => [event.outcome, event.foundBusy])).toEqual([
    ['granted', false],
    ['busy', true],
    ['timeout', true],
    ['aborted', true],
    ['error', false],
  ]);
  expect(ends[0]).toMatchObject({ backend: 'scripted', owner: 'me', key: 'k', token: held.token, lockId: expect.any(String) });
  expect(ends.slice(1).every((event) => event.token === undefined && typeof event.waitedMs === 'number')).toBe(true);
  expect(ends[4]!.error).toMatchObject({ code: 'HOLDFAST_BACKEND' });
  // One acquireId per call, on its acquire, wait, grant and end messages alike.
  const ids = (channel: string) => seen.filter(([name]) => name === channel).map(([, event]) => event.acquireId);
  expect(ids(CHANNELS.acquire)).toEqual(ends.map((event) => event.acquireId));
  expect(new Set(ids(CHANNELS.acquire)).size).toBe(5);
  expect(ids(CHANNELS.grant)).toEqual([ends[0]!.acquireId]);
  expect(ids(CHANNELS.wait)).toEqual([ends[2]!.acquireId, ends[3]!.acquireId]);
  const release = seen.find(([name]) => name === CHANNELS.release)![1];
  expect(release.lockId).toBe(ends[0]!.lockId);
});

test('a loss carries its reason; a failed backend call is published on holdfast:backend-error with its operation', async () => {
  const backend = new ScriptedBackend();
  const provider = createProvider(backend, { owner: 'me' });
  const forced = await provider.acquire('forced', { ttlMs: 10_000 });
  await provider.forceRelease('forced');
  const failing = await provider.acquire('failing', { ttlMs: 200 });
  backend.behaviour.extend = 'fail';
  await new Promise((resolve) => failing.signal.addEventListener('abort', resolve, { once: true }));
  backend.behaviour.extend = 'normal';
  await provider.close();
  const losses = seen.filter(([name]) => name === CHANNELS.lost).map(([, event]) => [event.key, event.reason]);
  expect(losses).toEqual([
    ['forced', 'force-released'],
    ['failing', 'renewal-failed'],
  ]);
  expect(forced.signal.aborted).toBe(true);
  const errors = seen.filter(([name]) => name === CHANNELS.backendError).map(([, event]) => event);
  expect(errors.length).toBeGreaterThan(0);
  expect(errors.every((event) => event.operation === 'renew' && event.key === 'failing' && event.owner === 'me')).toBe(true);
  expect(errors[0]!.error).toMatchObject({ code: 'HOLDFAST_BACKEND' });
});
