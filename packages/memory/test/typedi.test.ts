import { LOCK_PROVIDER, registerLockProvider } from '@holdfast/core/typedi';
import { Container } from 'typedi';
import { afterEach, expect, test } from 'vitest';

afterEach(async () => {
  await Container.get(LOCK_PROVIDER).close();
  Container.reset();
});

test('services receive the configured LockProvider by injection, importing only core', async () => {
  const registered = await registerLockProvider('memory://typedi-test');
  const injected = Container.get(LOCK_PROVIDER);
  expect(injected).toBe(registered);
  expect(injected.backend).toBe('memory');
  const lock = await injected.tryAcquire('typedi/nightly');
  expect(lock?.key).toBe('typedi/nightly');
});

test('HOLDFAST_URL is the default source', async () => {
  process.env.HOLDFAST_URL = 'memory://typedi-env';
  try {
    const provider = await registerLockProvider();
    expect(provider.backend).toBe('memory');
  } finally {
    delete process.env.HOLDFAST_URL;
  }
});
