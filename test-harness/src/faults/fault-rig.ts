import type { LockProvider } from '@holdfast/core';
import { within } from '../helpers/index.js';
import type { ServerAddress } from './address.js';
import type { FaultHooks, FaultProviderOptions } from './hooks.js';
import { type HungListener, hungListener } from './hung-listener.js';
import { FaultProxy } from './tcp-proxy.js';

/** Longest a target's createProviderAt() may take; it must not wait for the server to answer. */
const CREATE_BOUND_MS = 10_000;

/**
 * One fault case's proxies, hung listeners and providers built at those addresses; dispose() closes
 * the providers first (bounded by their close timeout), then the network fixtures.
 */
export class FaultRig {
  private readonly providers: { provider: LockProvider; closeTimeoutMs: number }[] = [];
  private readonly fixtures: { close(): Promise<void> }[] = [];

  constructor(private readonly hooks: FaultHooks) {}

  async proxy(): Promise<FaultProxy> {
    const proxy = await FaultProxy.start(this.hooks.server);
    this.fixtures.push(proxy);
    return proxy;
  }

  async hung(): Promise<HungListener> {
    const hung = await hungListener();
    this.fixtures.push(hung);
    return hung;
  }

  async providerAt(address: ServerAddress, options: FaultProviderOptions): Promise<LockProvider> {
    const provider = await within(
      Promise.resolve(this.hooks.createProviderAt(address, options)),
      CREATE_BOUND_MS,
      `createProviderAt(${address.host}:${address.port}) returns without waiting for the server`,
    );
    this.providers.push({ provider, closeTimeoutMs: options.closeTimeoutMs });
    return provider;
  }

  async dispose(): Promise<void> {
    await Promise.allSettled(
      this.providers.map(({ provider, closeTimeoutMs }) => within(provider.close(), closeTimeoutMs + CREATE_BOUND_MS, 'close()')),
    );
    await Promise.allSettled(this.fixtures.map((fixture) => fixture.close()));
  }
}
