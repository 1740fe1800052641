import { InvalidArgumentError, type LockProvider } from '@holdfast/core';
import { Inject } from '@nestjs/common';
import { LOCK_PROVIDER } from './tokens.js';

// A method decorator runs when the class is defined, long before Nest has a provider to give. So the
// decorator asks Nest to inject the LockProvider into a hidden property of each instance, and the
// wrapped method reads it from `this` at the call. Per instance, not a module-wide variable: two Nest
// applications in one process (tests, a worker beside an API) each use their own provider.
const PROVIDER_PROPERTY = Symbol.for('@holdfast/nestjs:provider');
const injected = new WeakSet<object>();

type AnyMethod = (this: unknown, ...args: unknown[]) => unknown;

/** Minimal view of reflect-metadata, which Nest loads: enough to carry other decorators' metadata over. */
interface MetadataReflect {
  getOwnMetadataKeys?(target: object): unknown[];
  getOwnMetadata?(key: unknown, target: object): unknown;
  defineMetadata?(key: unknown, value: unknown, target: object): void;
}

/**
 * Replaces the method with `wrap(original)`, after asking Nest to inject the provider into the
 * instance. Metadata that other decorators put on the original function (`@Cron`, `@Get`, `@UseGuards` set
 * it with reflect-metadata) is copied to the wrapper, so the order of the decorators does not matter.
 */
export function replaceMethod(
  decorator: string,
  prototype: object,
  name: string | symbol,
  descriptor: PropertyDescriptor,
  wrap: (original: AnyMethod) => AnyMethod,
): PropertyDescriptor {
  const original = descriptor.value as unknown;
  if (typeof original !== 'function') throw new InvalidArgumentError(decorator, `${String(name)} is not a method`);
  if (!injected.has(prototype)) {
    Inject(LOCK_PROVIDER)(prototype, PROVIDER_PROPERTY);
    injected.add(prototype);
  }
  const wrapper = wrap(original as AnyMethod);
  Object.defineProperty(wrapper, 'name', { value: (original as AnyMethod).name });
  copyMetadata(original, wrapper);
  return { ...descriptor, value: wrapper };
}

/** The provider Nest injected into `instance`; a typed error when Nest did not create it. */
export function providerOf(instance: unknown, decorator: string, name: string | symbol): LockProvider {
  const provider = (instance as { [PROVIDER_PROPERTY]?: LockProvider } | undefined)?.[PROVIDER_PROPERTY];
  if (provider === undefined) {
    throw new InvalidArgumentError(
      'this',
      `@${decorator} method ${String(name)} was called on an object that Nest did not create, or without HoldfastModule imported`,
    );
  }
  return provider;
}

function copyMetadata(from: object, to: object): void {
  const reflect = Reflect as unknown as MetadataReflect;
  if (!reflect.getOwnMetadataKeys || !reflect.getOwnMetadata || !reflect.defineMetadata) return;
  for (const key of reflect.getOwnMetadataKeys(from)) reflect.defineMetadata(key, reflect.getOwnMetadata(key, from), to);
}
