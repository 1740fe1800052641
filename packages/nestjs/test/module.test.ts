import { createLockProvider, ErrorCode, type LockProvider } from '@holdfast/core';
import { abortedWithin, codeOf, rejection, within } from '@holdfast/test-harness/helpers';
import { useBackend } from '@holdfast/test-harness/servers/vitest';
import { Inject, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { describe, expect, test } from 'vitest';
import { HOLDFAST_MODULE_OPTIONS, HoldfastModule, InjectLocks, LOCK_PROVIDER, WithLock } from '../src/index.js';
import { backendsUnderTest, closeApp, STEP_MS, startApp } from './nest-apps.js';

const redis = await useBackend('redis');

@Injectable()
class TwoWays {
  constructor(
    @Inject(LOCK_PROVIDER) readonly byToken: LockProvider,
    @InjectLocks() readonly byDecorator: LockProvider,
  ) {}

  @WithLock('feature:{0}')
  async locked(id: string) {
    return (await this.byToken.inspect(`feature:${id}`))?.owner === this.byToken.owner;
  }
}

/** A feature module that does not import HoldfastModule: it relies on isGlobal. */
@Module({ providers: [TwoWays], exports: [TwoWays] })
class FeatureModule {}

const SETTINGS = 'settings';

/** Stands for a ConfigModule: the URL comes from a provider. */
@Module({})
class SettingsModule {
  static with(url: string) {
    return { module: SettingsModule, providers: [{ provide: SETTINGS, useValue: { lockUrl: url } }], exports: [SETTINGS] };
  }
}

for (const backend of backendsUnderTest(redis.url)) {
  describe.skipIf(backend.url === null)(`HoldfastModule (${backend.name})`, () => {
    const url = backend.url!;

    test('forRoot: the provider for the URL, the same one by token and by @InjectLocks()', async () => {
      const app = await startApp(url, { providers: [TwoWays] });
      const service = app.get(TwoWays);
      expect(service.byToken).toBe(service.byDecorator);
      expect(service.byToken.backend.toLowerCase()).toContain(backend.name);
      expect(app.get(HOLDFAST_MODULE_OPTIONS)).toEqual({ url });
      expect(await within(service.locked(`${Date.now()}`), STEP_MS, 'a @WithLock method')).toBe(true);
    });

    test('forRootAsync: options from a factory with its imports and inject; isGlobal serves modules that do not import it', async () => {
      const app = await startApp(null, {
        holdfast: false,
        imports: [
          HoldfastModule.forRootAsync({
            isGlobal: true,
            imports: [SettingsModule.with(url)],
            inject: [SETTINGS],
            useFactory: (settings: { lockUrl: string }) => ({ url: settings.lockUrl, closeTimeoutMs: STEP_MS }),
          }),
          FeatureModule,
        ],
      });
      const service = app.get(TwoWays);
      expect(service.byToken.backend.toLowerCase()).toContain(backend.name);
      expect(await within(service.locked(`${Date.now()}`), STEP_MS, 'a @WithLock method in the feature module')).toBe(true);
    });

    test('shutdown closes the provider: held locks are released and their signals abort, later calls are refused', async () => {
      const app = await startApp(url, { providers: [TwoWays] });
      const locks = app.get<LockProvider>(LOCK_PROVIDER);
      const key = `shutdown:${process.pid}:${Date.now()}`;
      const lock = await within(locks.acquire(key, { waitMs: 0 }), STEP_MS, 'acquire');
      await within(closeApp(app), STEP_MS, 'app.close()');
      await abortedWithin(lock.signal, STEP_MS, 'the held lock is let go');
      expect(codeOf(await rejection(within(locks.acquire('after', { waitMs: 0 }), STEP_MS, 'acquire after close')))).toBe(
        ErrorCode.ProviderClosed,
      );
      // Seen from another provider on the same backend: nothing left behind.
      const observer = await createLockProvider(url);
      try {
        expect(await within(observer.inspect(key), STEP_MS, 'inspect')).toBeNull();
      } finally {
        await observer.close();
      }
    });
  });
}

describe('HoldfastModule refuses bad settings before any backend is touched', () => {
  test('a URL that is no URL fails the application start with an InvalidArgumentError', async () => {
    const error = await rejection(
      within(Test.createTestingModule({ imports: [HoldfastModule.forRoot({ url: 'nowhere' })] }).compile(), STEP_MS, 'compile'),
    );
    expect(codeOf(error)).toBe(ErrorCode.InvalidArgument);
  });

  test('forRootAsync without a factory, and an unknown busy behaviour, are refused where they are written', () => {
    expect(() => HoldfastModule.forRootAsync({} as never)).toThrow(/useFactory/);
    expect(() => WithLock('k', { onBusy: 'queue' as never })).toThrow(/onBusy/);
  });
});
