import { isIP } from 'node:net';
import { type Channel, type ChannelCredentials, credentials as grpcCredentials } from '@grpc/grpc-js';
import { type CommonProviderOptions, InvalidArgumentError } from '@holdfast/core';
import { COMMON_PROVIDER_OPTION_NAMES, checkOptionNames, DEFAULT_CALL_TIMEOUT_MS, MAX_TIMER_MS } from '@holdfast/core/backend';
import type { Connection } from './rpc.js';

export interface EtcdLockOptions extends CommonProviderOptions {
  /**
   * The members' client addresses, `host:port` (an `http://` or `https://` prefix is accepted; https
   * means TLS with the system's roots unless `credentials` says otherwise). Several members must be
   * IP addresses, or give one DNS name that resolves to all of them. Not with `channel`.
   */
  readonly endpoints?: readonly string[];
  /**
   * The app's own `@grpc/grpc-js` channel to the cluster: the provider's calls share its connection,
   * and close() leaves it open (it is the app's). Not with `endpoints`.
   */
  readonly channel?: Channel;
  /** TLS or other channel credentials for `endpoints` (default: insecure, or TLS for https:// endpoints). */
  readonly credentials?: ChannelCredentials;
  /** Where the locks live: lock "a" is the etcd directory "<prefix>/a/". Default "holdfast". */
  readonly prefix?: string;
}

export interface ResolvedOptions {
  readonly connection: Connection;
  readonly prefix: string;
  readonly callTimeoutMs: number;
}

const OWN = ['endpoints', 'channel', 'credentials', 'prefix'] as const;
const NAMES: readonly string[] = [...OWN, ...COMMON_PROVIDER_OPTION_NAMES];

/** Checks every option (InvalidArgumentError on the first bad one) before anything talks to etcd. */
export function resolveOptions(options: EtcdLockOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', 'expected an object');
  checkOptionNames(Object.keys(options), { backend: 'etcd', known: NAMES, renamed: {}, where: '' });
  const prefix = checkPrefix(options.prefix ?? 'holdfast');
  const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  if (!Number.isInteger(callTimeoutMs) || callTimeoutMs < 1 || callTimeoutMs > MAX_TIMER_MS) {
    throw new InvalidArgumentError('callTimeoutMs', `expected a whole number in 1..${MAX_TIMER_MS}, got ${String(callTimeoutMs)}`);
  }
  if (options.channel !== undefined) {
    if (options.endpoints !== undefined) throw new InvalidArgumentError('channel', 'give either a channel or endpoints, not both');
    if (typeof options.channel?.getTarget !== 'function') throw new InvalidArgumentError('channel', 'expected a @grpc/grpc-js Channel');
    const creds = options.credentials ?? grpcCredentials.createInsecure();
    return { connection: { target: options.channel.getTarget(), credentials: creds, channel: options.channel }, prefix, callTimeoutMs };
  }
  const { target, tls } = grpcTarget(options.endpoints);
  const creds = options.credentials ?? (tls ? grpcCredentials.createSsl() : grpcCredentials.createInsecure());
  return { connection: { target, credentials: creds }, prefix, callTimeoutMs };
}

function checkPrefix(value: unknown): string {
  if (typeof value !== 'string') throw new InvalidArgumentError('prefix', `expected a string, got ${typeof value}`);
  const prefix = value.replace(/^\/+|\/+$/g, '');
  if (prefix === '') throw new InvalidArgumentError('prefix', 'must not be empty (every lock is a directory under it)');
  return prefix;
}

/**
 * The gRPC target for the endpoints: `ipv4:a:1,b:2` (or ipv6) lets pick_first move to another
 * member when one stops answering; a single name is resolved by DNS (every address it has).
 */
function grpcTarget(endpoints: unknown): { target: string; tls: boolean } {
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    throw new InvalidArgumentError('endpoints', 'expected a non-empty array of "host:port" (or a channel)');
  }
  const parsed = endpoints.map((e) => endpoint(e));
  const tls = parsed.some((p) => p.tls);
  if (parsed.some((p) => p.tls !== tls)) throw new InvalidArgumentError('endpoints', 'mixes http:// and https://');
  if (parsed.length === 1 && isIP(parsed[0]!.host) === 0) return { target: `dns:${parsed[0]!.host}:${parsed[0]!.port}`, tls };
  const families = new Set(parsed.map((p) => isIP(p.host)));
  if (families.has(0) || families.size > 1) {
    throw new InvalidArgumentError('endpoints', 'several members must all be IPv4 or all IPv6 addresses (or give one DNS name)');
  }
  const v6 = families.has(6);
  return { target: `${v6 ? 'ipv6' : 'ipv4'}:${parsed.map((p) => (v6 ? `[${p.host}]:${p.port}` : `${p.host}:${p.port}`)).join(',')}`, tls };
}

function endpoint(text: unknown): { host: string; port: number; tls: boolean } {
  if (typeof text !== 'string' || text === '')
    throw new InvalidArgumentError('endpoints', `expected "host:port", got ${JSON.stringify(text)}`);
  const m = /^(?:(https?):\/\/)?(\[[0-9a-fA-F:.]+\]|[^:/[\]]+)(?::(\d+))?\/?$/.exec(text);
  if (!m) throw new InvalidArgumentError('endpoints', `"${text}" is not "host:port"`);
  const port = m[3] === undefined ? 2379 : Number(m[3]);
  if (port < 1 || port > 65535) throw new InvalidArgumentError('endpoints', `"${text}": port out of range`);
  const host = m[2]!.replace(/^\[|\]$/g, '');
  return { host: host === 'localhost' ? '127.0.0.1' : host, port, tls: m[1] === 'https' };
}
