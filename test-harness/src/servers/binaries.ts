import { accessSync, constants, existsSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { type GoServerSpec, serverVersions } from './versions.js';

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

/** The pinned etcd from the cache, else `etcd` on PATH, else null. */
export async function etcdBinary(): Promise<string | null> {
  return goServer(serverVersions().go.etcd);
}

/** The pinned etcdctl (etcd's own CLI, for interop tests) from the cache, else on PATH, else null. */
export async function etcdctlBinary(): Promise<string | null> {
  return goServer(serverVersions().go.etcdctl);
}

export async function redisServerBinary(): Promise<string | null> {
  return onPath(serverVersions().apt.redis.binary);
}

/** A binary on PATH or in the sbin dirs that a non-root PATH often lacks (Debian puts mariadbd there). */
function onPathOrSbin(name: string): string | null {
  for (const dir of ['/usr/sbin', '/usr/local/sbin']) if (executable(join(dir, name))) return join(dir, name);
  return onPath(name);
}

/**
 * The bin dir of the newest Debian PostgreSQL (/usr/lib/postgresql/<major>/bin, off PATH), else the
 * dir of `initdb` on PATH when `postgres` is next to it; null when there is none.
 */
export async function postgresBinDir(): Promise<string | null> {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((d) => /^\d+$/.test(d))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bin = join(root, major, 'bin');
    if (executable(join(bin, 'initdb')) && executable(join(bin, 'postgres'))) return bin;
  }
  const initdb = onPath('initdb');
  return initdb && executable(join(dirname(initdb), 'postgres')) ? dirname(initdb) : null;
}

/** The MariaDB server and its data-dir initialiser (mariadb-install-db), or null when either is missing. */
export async function mariadbBinaries(): Promise<{ server: string; installDb: string } | null> {
  const server = onPathOrSbin('mariadbd');
  const installDb = onPathOrSbin('mariadb-install-db');
  return server && installDb ? { server, installDb } : null;
}
