import { Container, Token } from 'typedi';
import { type CreateLockProviderOptions, createLockProvider } from './registry.js';
import type { LockProvider } from './types.js';

/** Inject with `@Inject(LOCK_PROVIDER)` or `Container.get(LOCK_PROVIDER)`. */
export const LOCK_PROVIDER = new Token<LockProvider>('holdfast.LockProvider');

/**
 * Creates the provider from `url` (default `HOLDFAST_URL`; neither is an InvalidArgumentError) and registers it, so
 * services receive a LockProvider by injection and import nothing but core.
 */
export async function registerLockProvider(url?: string, options?: CreateLockProviderOptions): Promise<LockProvider> {
  const provider = await createLockProvider(url, options);
  Container.set(LOCK_PROVIDER, provider);
  return provider;
}
