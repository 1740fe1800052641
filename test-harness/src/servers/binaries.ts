import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { serverVersions, type GoServerSpec } from './versions.js';

/** Where servers-install.mjs puts built servers: ${XDG_CACHE_HOME:-~/.cache}/holdfast. */
export function serversCacheDir(): string {
  return join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'holdfast');
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Absolute path of `name` on PATH, or null. */
export function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  return null;
}

function goServer(spec: GoServerSpec): string | null {
  const cachedBin = join(serversCacheDir(), `${spec.binary}-${spec.version}`, spec.binary);
  return executable(cachedBin) ? cachedBin : onPath(spec.binary);
}

/** The pinned Consul from the cache, else `consul` on PATH, else null. */
export async function consulBinary(): Promise<string | null> {
  return goServer(serverVersions().go.consul);
}

/** The pinned FerretDB from the cache, else `ferretdb` on PATH, else null. */
export async function ferretdbBinary(): Promise<string | null> {
  return goServer(serverVersions().go.ferretdb);
}

export async function redisServerBinary(): Promise<string | null> {
  return onPath(serverVersions().apt.redis.binary);
}
