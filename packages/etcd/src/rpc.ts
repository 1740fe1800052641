import type { Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { BackendError } from '@holdfast/core';
import { ETCD_PROTO } from './proto.js';
import { noteSockets } from './sockets.js';

/** A unary method of a generated stub: (request, metadata, options, callback) => call. */
type UnaryMethod = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (error: grpc.ServiceError | null, response?: unknown) => void,
) => grpc.ClientUnaryCall;

type Stub = grpc.Client & Record<string, UnaryMethod & ((...args: unknown[]) => grpc.ClientDuplexStream<unknown, unknown>)>;

interface Services {
  KV: grpc.ServiceClientConstructor;
  Watch: grpc.ServiceClientConstructor;
  Lease: grpc.ServiceClientConstructor;
}

let services: Services | undefined;

/** int64 as decimal strings (lease ids and revisions exceed 2^53), enums by name, bytes as Buffers. */
function loadServices(): Services {
  if (services) return services;
  const definition = protoLoader.fromJSON(ETCD_PROTO as unknown as Parameters<typeof protoLoader.fromJSON>[0], {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { etcdserverpb: Services };
  services = pkg.etcdserverpb;
  return services;
}

/** Where and how to reach the cluster: the gRPC target, or a channel the app made and owns. */
export interface Connection {
  /** e.g. `ipv4:127.0.0.1:2379,127.0.0.1:22379` or `dns:etcd.local:2379`. */
  readonly target: string;
  readonly credentials: grpc.ChannelCredentials;
  /** The app's own channel: shared with its stubs, never closed by the adapter. */
  readonly channel?: grpc.Channel;
}

/**
 * One HTTP/2 channel to the cluster and the three services the protocol uses. pick_first over the
 * endpoints: a member that stops answering HTTP/2 pings is dropped and the next one is tried, so a
 * SIGSTOPped or partitioned member does not hold every call until its deadline.
 */
export class EtcdRpc {
  readonly kv: Stub;
  readonly watch: Stub;
  readonly lease: Stub;
  private readonly ownsChannel: boolean;
  private readonly sockets = new Set<Socket>();

  constructor(connection: Connection) {
    const { KV, Watch, Lease } = loadServices();
    const options: grpc.ClientOptions = {
      // etcd's default --grpc-keepalive-min-time is 5 s; pings more often get a GOAWAY.
      'grpc.keepalive_time_ms': 5000,
      'grpc.keepalive_timeout_ms': 2000,
      'grpc.keepalive_permit_without_calls': 1,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
      // A request is never silently resent by the library: core decides what is retried.
      'grpc.enable_retries': 0,
      // The default global pool keeps a closed channel's connections until a sweep 10 s later:
      // close() must leave no socket behind.
      'grpc.use_local_subchannel_pool': 1,
    };
    this.ownsChannel = connection.channel === undefined;
    const channel = connection.channel ?? new grpc.Channel(connection.target, noteSockets(connection.credentials, this.sockets), options);
    const shared = { ...options, channelOverride: channel };
    this.kv = new KV(connection.target, connection.credentials, shared) as unknown as Stub;
    this.watch = new Watch(connection.target, connection.credentials, shared) as unknown as Stub;
    this.lease = new Lease(connection.target, connection.credentials, shared) as unknown as Stub;
  }

  /** One unary call, cancelled when `signal` aborts; every failure is a BackendError. */
  unary<Res>(stub: Stub, method: string, request: unknown, signal: AbortSignal): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      if (signal.aborted) return reject(failure(method, signal.reason));
      const onAbort = (): void => call.cancel();
      const call = stub[method]!(request, new grpc.Metadata(), {}, (error, response) => {
        signal.removeEventListener('abort', onAbort);
        if (error) reject(failure(method, signal.aborted ? signal.reason : error));
        else resolve(response as Res);
      });
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** A bidirectional stream (Watch, LeaseKeepAlive); the caller ends it with cancel(). */
  stream(stub: Stub, method: string): grpc.ClientDuplexStream<unknown, unknown> {
    return stub[method]!() as grpc.ClientDuplexStream<unknown, unknown>;
  }

  /**
   * Closes the channel unless it is the app's: every call still running fails. The stubs share it
   * (closing a stub closes its channel), so they are not closed one by one.
   */
  close(): void {
    if (!this.ownsChannel) return;
    this.kv.getChannel().close();
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}

/** etcd's answer or the transport's, as core's BackendError ("busy" is never an error). */
export function failure(operation: string, cause: unknown): BackendError {
  if (cause instanceof BackendError) return cause;
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new BackendError('etcd', `${operation}: ${detail}`, cause);
}
