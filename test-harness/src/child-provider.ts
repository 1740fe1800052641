import { pathToFileURL } from 'node:url';
import { createLockProvider, type LockProvider } from '@holdfast/core';

/** What the suite hands a child-process script (crash and paused-holder cases) on its command line. */
export interface ChildSpec {
  url?: string;
  module?: string;
  key: string;
  ttlMs: number;
  /** Take a slot of a semaphore with this limit instead of the lock. */
  limit?: number;
  /** Take (or wait for) the writer's grant of the key's read-write lock instead of the lock. */
  mode?: 'exclusive';
}

export function childSpec(): ChildSpec {
  return JSON.parse(process.argv[2] ?? '{}') as ChildSpec;
}

/** The target's provider inside the child: from its URL, or from its module's createProvider(). */
export async function childProvider(spec: ChildSpec, script: string): Promise<LockProvider> {
  if (spec.url) return createLockProvider(spec.url);
  if (spec.module) {
    const imported = (await import(pathToFileURL(spec.module).href)) as { createProvider(): Promise<LockProvider> | LockProvider };
    return imported.createProvider();
  }
  throw new Error(`${script} needs a url or a module`);
}
