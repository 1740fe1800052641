import type { CreateLockProviderOptions } from '@holdfast/core';
import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';

/** createLockProvider's URL and options. */
export interface HoldfastOptions extends CreateLockProviderOptions {
  /** The backend's URL (`redis://host:6379`, `memory:` ...). Default: the HOLDFAST_URL environment variable. */
  readonly url?: string | URL;
}

/** Where the module is registered, beside the provider's options. */
export interface HoldfastModuleScope {
  /** Register the module globally, so feature modules inject the provider without importing it. Default false. */
  readonly isGlobal?: boolean;
}

/** HoldfastModule.forRootAsync: options from a factory, with the factory's own dependencies. */
export interface HoldfastModuleAsyncOptions extends HoldfastModuleScope {
  /** Modules whose providers the factory injects (a ConfigModule). */
  readonly imports?: ModuleMetadata['imports'];
  /** The factory's arguments, in order. */
  readonly inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** Returns the provider's options. */
  readonly useFactory: (...args: never[]) => HoldfastOptions | Promise<HoldfastOptions>;
}
