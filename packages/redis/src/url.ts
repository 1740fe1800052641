import { InvalidArgumentError } from '@holdfast/core';
import type { RedisOptions } from 'ioredis';

export interface ParsedRedisUrl {
  /** One entry per independent server; more than one means Redlock quorum mode. */
  readonly nodes: RedisOptions[];
  readonly db: number;
  readonly prefix: string;
}

/**
 * `redis://[user:password@]host:port[/db][?quorum=host2:port2,host3:port3][&prefix=app:]`,
 * `rediss://` for TLS. Node's URL parser refuses several hosts in the authority, so the other
 * nodes of a quorum go in the `quorum` parameter; they share the credentials, db and TLS setting.
 */
export function parseRedisUrl(url: URL): ParsedRedisUrl {
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new InvalidArgumentError('url', `expected redis: or rediss:, got "${url.protocol}"`);
  }
  const dbText = url.pathname.replace(/^\/+/, '') || '0';
  const db = Number(dbText);
  if (!Number.isInteger(db) || db < 0) throw new InvalidArgumentError('url', `database "${dbText}" is not a non-negative integer`);
  const shared: RedisOptions = {
    db,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  const others = (url.searchParams.get('quorum') ?? '').split(',').map((entry) => entry.trim()).filter(Boolean);
  const nodes = [url.host, ...others].map((host) => ({ ...shared, ...hostAndPort(host) }));
  return { nodes, db, prefix: url.searchParams.get('prefix') ?? '' };
}

function hostAndPort(authority: string): { host: string; port: number } {
  let parsed: URL;
  try {
    parsed = new URL(`redis://${authority}`);
  } catch {
    throw new InvalidArgumentError('url', `"${authority}" is not a host:port`);
  }
  if (!parsed.hostname) throw new InvalidArgumentError('url', `"${authority}" has no host`);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port: parsed.port ? Number(parsed.port) : 6379 };
}
