import { type CommonProviderOptions, InvalidArgumentError, parseDuration, redactUrl } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames, DEFAULT_CALL_TIMEOUT_MS, MAX_TIMER_MS } from '@holdfast/core/backend';
import type { Client } from 'node-zookeeper-client';

/** ZooKeeper's default bounds for a session are 2-20 ticks of 2 s; 10 s is Curator's... 60 s, Curator's default, is long for a lock. */
export const DEFAULT_SESSION_TIMEOUT_MS = 10_000;

export interface ZookeeperProviderOptions extends CommonProviderOptions {
  /** `zookeeper://host:2181,host:2182/chroot`; or give `client`. */
  readonly url?: string;
  /**
   * The app's own node-zookeeper-client, connected or not: used as is and never closed by the
   * provider. After its session expires it cannot be replaced, so every call fails until the app
   * gives a new provider a new client.
   */
  readonly client?: Client;
  /** The znode under which every key lives, below the URL's path. Default "/holdfast". */
  readonly prefix?: string;
  /** The session timeout asked of the server (which may clamp it), in ms. Default 10 s. */
  readonly sessionTimeoutMs?: number;
}

export interface ResolvedOptions {
  readonly connectionString: string;
  readonly client?: Client;
  /** The URL's path joined with the prefix: `/chroot/holdfast`. */
  readonly root: string;
  readonly sessionTimeoutMs: number;
  readonly callTimeoutMs: number;
}

const ADAPTER_KEYS = ['prefix', 'sessionTimeoutMs'] as const;
const OPTION_NAMES: readonly string[] = ['url', 'client', ...ADAPTER_KEYS, ...COMMON_PROVIDER_OPTION_NAMES];
const URL_PARAMETERS: Readonly<Record<string, (typeof ADAPTER_KEYS)[number]>> = { prefix: 'prefix', sessionTimeout: 'sessionTimeoutMs' };

/** Checks every option (InvalidArgumentError on the first bad one) before anything talks to ZooKeeper. */
export function resolveOptions(options: ZookeeperProviderOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), { backend: 'ZooKeeper', known: OPTION_NAMES });
  if ((options.url === undefined) === (options.client === undefined)) {
    throw new InvalidArgumentError('url', 'give either url (zookeeper://host:2181,host:2182/chroot) or client, not both or neither');
  }
  if (options.client !== undefined && typeof (options.client as Client | null)?.getChildren !== 'function') {
    throw new InvalidArgumentError('client', 'expected a node-zookeeper-client Client');
  }
  const { servers, path } = options.url === undefined ? { servers: '', path: '' } : parseUrl(options.url).address;
  const prefix = options.prefix ?? '/holdfast';
  if (typeof prefix !== 'string' || !/^\/?[^/]+(\/[^/]+)*\/?$/.test(prefix) || /(^|\/)\.\.?(\/|$)/.test(prefix)) {
    throw new InvalidArgumentError('prefix', `expected a znode path such as /holdfast, got ${JSON.stringify(prefix)}`);
  }
  const root = `${path}/${prefix.replace(/^\/+|\/+$/g, '')}`;
  return {
    connectionString: servers,
    client: options.client,
    root,
    sessionTimeoutMs: wholeMs('sessionTimeoutMs', options.sessionTimeoutMs, 500, 600_000) ?? DEFAULT_SESSION_TIMEOUT_MS,
    callTimeoutMs: wholeMs('callTimeoutMs', options.callTimeoutMs, 1, MAX_TIMER_MS) ?? DEFAULT_CALL_TIMEOUT_MS,
  };
}

/**
 * `zookeeper://h1:2181,h2:2182/chroot?prefix=/locks&sessionTimeout=5s`. Not a WHATWG URL (several
 * hosts), so parsed here. The path is a chroot the provider creates itself when missing, so it is
 * joined to the prefix rather than handed to the client (whose chroot must exist beforehand).
 */
export function parseUrl(url: string): { address: { servers: string; path: string }; settings: Partial<ZookeeperProviderOptions> } {
  const match = typeof url === 'string' ? /^zookeeper:\/\/([^/?#]+)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(url) : null;
  if (!match) {
    throw new InvalidArgumentError(
      'url',
      `"${redactUrl(String(url))}" is not a ZooKeeper URL (expected zookeeper://host:2181,host:2182/chroot)`,
    );
  }
  const servers = match[1]!.split(',').map((hostPort) => {
    const server = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(hostPort);
    if (!server) throw new InvalidArgumentError('url', `"${hostPort}" is not host:port`);
    return `${server[1]}:${server[2] ?? '2181'}`;
  });
  const path = (match[2] ?? '').replace(/\/+$/, '');
  if (path && (!/^(\/[^/]+)+$/.test(path) || /\/\.\.?(\/|$)/.test(path))) {
    throw new InvalidArgumentError('url', `the chroot "${path}" is not a znode path`);
  }
  const settings: Record<string, string | number> = {};
  for (const [name, value] of new URLSearchParams(match[3] ?? '')) {
    const setting = URL_PARAMETERS[name];
    if (!setting) throw new InvalidArgumentError('url', `unknown parameter "${name}"; expected ${Object.keys(URL_PARAMETERS).join(', ')}`);
    settings[setting] = setting === 'sessionTimeoutMs' ? parseDuration(value, `url ${name}`) : value;
  }
  return { address: { servers: servers.join(','), path }, settings };
}

function wholeMs(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(name, `expected a whole number of ms from ${min} to ${max}, got ${String(value)}`);
  }
  return value;
}
