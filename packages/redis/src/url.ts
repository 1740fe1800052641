import { InvalidArgumentError } from '@holdfast/core';
import type { RedisOptions } from 'ioredis';

export interface ParsedRedisUrl {
  /** One entry per independent server; more than one means Redlock quorum mode. */
  readonly nodes: RedisOptions[];
  readonly db: number;
  /** Undefined when the URL does not say; `?prefix=` (empty) means no prefix at all. */
  readonly prefix: string | undefined;
}

const PARAMETERS = new Set(['quorum', 'prefix']);

/**
 * `redis://[user:password@]host:port[/db][?quorum=host2:port2,host3:port3][&prefix=app:]`,
 * `rediss://` for TLS. Node's URL parser refuses several hosts in the authority, so the other
 * nodes of a quorum go in the `quorum` parameter; they share the credentials, db and TLS setting.
 * Whether the server has that db is only known once connected (its `databases` setting).
 */
export function parseRedisUrl(input: string | URL): ParsedRedisUrl {
  const url = asUrl(input);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new InvalidArgumentError('url', `expected redis: or rediss:, got "${url.protocol}"`);
  }
  for (const name of url.searchParams.keys()) {
    if (!PARAMETERS.has(name)) throw new InvalidArgumentError('url', `unknown parameter "${name}"; expected ${[...PARAMETERS].join(', ')}`);
    if (url.searchParams.getAll(name).length > 1) throw new InvalidArgumentError('url', `parameter "${name}" is given more than once`);
  }
  const dbText = url.pathname.replace(/^\//, '') || '0';
  if (!/^\d{1,9}$/.test(dbText)) throw new InvalidArgumentError('url', `database "${dbText}" is not a non-negative integer`);
  const db = Number(dbText);
  const shared: RedisOptions = {
    db,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  const others = (url.searchParams.get('quorum') ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const nodes = [hostAndPort(url.host, url), ...others.map((entry) => hostAndPort(entry))].map((node) => ({ ...shared, ...node }));
  const seen = new Set<string>();
  for (const { host, port } of nodes) {
    const id = `${host.toLowerCase()}:${port}`;
    if (seen.has(id)) throw new InvalidArgumentError('url', `node ${id} is listed twice; a quorum needs distinct servers`);
    seen.add(id);
  }
  return { nodes, db, prefix: url.searchParams.has('prefix') ? url.searchParams.get('prefix')! : undefined };
}

function asUrl(input: string | URL): URL {
  if (input instanceof URL) return input;
  try {
    return new URL(input);
  } catch {
    throw new InvalidArgumentError('url', `"${input}" is not a valid URL (expected redis://host:port[/db])`);
  }
}

function hostAndPort(authority: string, parsedAlready?: URL): { host: string; port: number } {
  let parsed: URL;
  try {
    parsed = parsedAlready ?? new URL(`redis://${authority}`);
  } catch {
    throw new InvalidArgumentError('url', `"${authority}" is not a host:port`);
  }
  if (!parsed.hostname) throw new InvalidArgumentError('url', `"${authority}" has no host`);
  if (!parsedAlready && (parsed.username || parsed.password || parsed.pathname !== '' || parsed.search)) {
    throw new InvalidArgumentError('url', `quorum node "${authority}" must be a bare host:port (credentials and db are shared)`);
  }
  const port = parsed.port ? Number(parsed.port) : 6379;
  if (port === 0) throw new InvalidArgumentError('url', `"${authority}" has port 0`);
  return { host: parsed.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}
