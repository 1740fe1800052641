import { Inject } from '@nestjs/common';

/**
 * The injection token of the module's LockProvider: `@Inject(LOCK_PROVIDER) locks: LockProvider`.
 * A registered symbol, so the ESM and CommonJS builds of this package (both loaded in one app) name
 * the same provider.
 */
export const LOCK_PROVIDER: unique symbol = Symbol.for('@holdfast/nestjs:LockProvider');

/** The options HoldfastModule was configured with, for providers that want to read them. */
export const HOLDFAST_MODULE_OPTIONS: unique symbol = Symbol.for('@holdfast/nestjs:ModuleOptions');

/** Injects the module's LockProvider: `constructor(@InjectLocks() private readonly locks: LockProvider) {}`. */
export function InjectLocks(): PropertyDecorator & ParameterDecorator {
  return Inject(LOCK_PROVIDER);
}
