import { InvalidArgumentError } from '@holdfast/core';
import type { RedisOptions } from 'ioredis';

/** A host and port of a seed node (Cluster) or a Sentinel. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** What `redis+cluster:` and `redis+sentinel:` URLs describe. */
export type Topology =
  | { readonly kind: 'cluster'; readonly seeds: readonly HostPort[]; readonly shared: RedisOptions }
  | { readonly kind: 'sentinel'; readonly sentinels: readonly HostPort[]; readonly name: string; readonly node: RedisOptions };

const TOPOLOGY_PARAMETERS = new Set(['prefix']);

/**
 * `redis+cluster://[user:password@]host:port,host:port[?prefix=]` (seed nodes of one Redis Cluster,
 * db 0 only: a Cluster has no other) and
 * `redis+sentinel://[user:password@]host:26379,host:26380/mymaster[/db][?prefix=]` (the Sentinels and
 * the name they monitor). `rediss+cluster:` / `rediss+sentinel:` for TLS to the data nodes. Node's URL
 * parser refuses several hosts in the authority, so the list is split by hand.
 */
export function parseTopologyUrl(text: string): { topology: Topology; db: number; prefix: string | undefined } {
  const match = /^(rediss?)\+(cluster|sentinel):\/\/(?:([^@/?]*)@)?([^/?]*)(\/[^?]*)?(?:\?(.*))?$/.exec(text);
  if (!match) throw new InvalidArgumentError('url', `"${text}" is not a redis+cluster:// or redis+sentinel:// URL`);
  const [, scheme, kind, credentials, hostList, path = '', query = ''] = match;
  const params = new URLSearchParams(query);
  for (const name of params.keys()) {
    if (!TOPOLOGY_PARAMETERS.has(name)) throw new InvalidArgumentError('url', `unknown parameter "${name}"; expected prefix`);
  }
  const hosts = hostList!.split(',').map((entry) => hostPort(entry.trim(), kind === 'sentinel' ? 26379 : 6379));
  if (hosts.length === 0 || hostList === '') throw new InvalidArgumentError('url', `"${text}" names no host`);
  const seen = new Set<string>();
  for (const { host, port } of hosts) {
    const id = `${host.toLowerCase()}:${port}`;
    if (seen.has(id)) throw new InvalidArgumentError('url', `${id} is listed twice`);
    seen.add(id);
  }
  const shared: RedisOptions = { ...credentialsOf(credentials), ...(scheme === 'rediss' ? { tls: {} } : {}) };
  const prefix = params.has('prefix') ? params.get('prefix')! : undefined;
  const segments = path.split('/').filter(Boolean);
  if (kind === 'cluster') {
    if (segments.length > 0 && !(segments.length === 1 && segments[0] === '0'))
      throw new InvalidArgumentError('url', `a Redis Cluster has only database 0, got "${path}"`);
    return { topology: { kind: 'cluster', seeds: hosts, shared }, db: 0, prefix };
  }
  const [name, dbText = '0', ...rest] = segments.map(decodeURIComponent);
  if (!name) throw new InvalidArgumentError('url', 'a redis+sentinel URL needs the monitored name: redis+sentinel://host:26379/mymaster');
  if (rest.length > 0 || !/^\d{1,9}$/.test(dbText))
    throw new InvalidArgumentError('url', `"${path}" is not /name or /name/db (db a non-negative integer)`);
  const db = Number(dbText);
  return {
    topology: {
      kind: 'sentinel',
      sentinels: hosts,
      name,
      node: { ...shared, db, sentinels: hosts.map((h) => ({ ...h })), name, failoverDetector: true },
    },
    db,
    prefix,
  };
}

export function isTopologyUrl(text: string): boolean {
  return /^rediss?\+(cluster|sentinel):/i.test(text);
}

function credentialsOf(text: string | undefined): RedisOptions {
  if (!text) return {};
  const at = text.indexOf(':');
  const username = decodeURIComponent(at < 0 ? text : text.slice(0, at));
  const password = at < 0 ? '' : decodeURIComponent(text.slice(at + 1));
  return { ...(username ? { username } : {}), ...(password ? { password } : {}) };
}

function hostPort(entry: string, defaultPort: number): HostPort {
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!match) throw new InvalidArgumentError('url', `"${entry}" is not a host:port`);
  const port = match[2] === undefined ? defaultPort : Number(match[2]);
  if (port === 0 || port > 65535) throw new InvalidArgumentError('url', `"${entry}" has port ${port}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}
