import { createLockProvider, InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { type DynamicModule, Inject, Module, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import type { HoldfastModuleAsyncOptions, HoldfastModuleScope, HoldfastOptions } from './module-options.js';
import { HOLDFAST_MODULE_OPTIONS, LOCK_PROVIDER } from './tokens.js';

const PROVIDER: Provider = {
  provide: LOCK_PROVIDER,
  inject: [HOLDFAST_MODULE_OPTIONS],
  useFactory: ({ url, ...options }: HoldfastOptions): Promise<LockProvider> => createLockProvider(url, options),
};

/**
 * Gives the application one LockProvider, injected with `@InjectLocks()` or `@Inject(LOCK_PROVIDER)`
 * and used by `@WithLock` and `@LeaderOnly` methods, and closes it when the application shuts down
 * (`app.close()`, or a signal after `app.enableShutdownHooks()`): the locks still held are released,
 * the connections and timers end.
 */
@Module({})
export class HoldfastModule implements OnApplicationShutdown {
  constructor(@Inject(LOCK_PROVIDER) private readonly provider: LockProvider) {}

  /** The provider from `createLockProvider(url, options)`, created when the application starts. */
  static forRoot(options: HoldfastOptions & HoldfastModuleScope = {}): DynamicModule {
    if (options === null || typeof options !== 'object') throw new InvalidArgumentError('options', 'expected { url, ... }');
    const { isGlobal, ...providerOptions } = options;
    return HoldfastModule.build(isGlobal, [], { provide: HOLDFAST_MODULE_OPTIONS, useValue: providerOptions });
  }

  /** The provider from options a factory returns (from a ConfigService, say). */
  static forRootAsync(options: HoldfastModuleAsyncOptions): DynamicModule {
    if (options === null || typeof options !== 'object' || typeof options.useFactory !== 'function') {
      throw new InvalidArgumentError('options', 'expected { useFactory, inject?, imports?, isGlobal? }');
    }
    return HoldfastModule.build(options.isGlobal, options.imports ?? [], {
      provide: HOLDFAST_MODULE_OPTIONS,
      inject: options.inject ?? [],
      useFactory: options.useFactory as (...args: unknown[]) => HoldfastOptions | Promise<HoldfastOptions>,
    });
  }

  private static build(isGlobal: boolean | undefined, imports: NonNullable<DynamicModule['imports']>, options: Provider): DynamicModule {
    return {
      module: HoldfastModule,
      global: isGlobal === true,
      imports,
      providers: [options, PROVIDER],
      exports: [LOCK_PROVIDER, HOLDFAST_MODULE_OPTIONS],
    };
  }

  /** Closes the provider: held locks are released (or reported lost), nothing keeps running. */
  async onApplicationShutdown(): Promise<void> {
    await this.provider.close();
  }
}
