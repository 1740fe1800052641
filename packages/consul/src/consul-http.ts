import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

/*
 * Plain HTTP instead of the `consul` npm client, on purpose:
 * - every KV answer carries `Flags`, and the lock flag (0x2ddccbc058a50c18) exceeds 2^53: a client that
 *   JSON.parse()s bodies (as the npm client does) silently rounds it, so flag checks against
 *   `consul lock` peers would be wrong. We rewrite Flags to strings before parsing (parseFlagSafe).
 * - blocking queries need the X-Consul-Index header of each answer and cancellation by AbortSignal.
 * - close() must leave no timers or sockets behind (conformance case 30): one keep-alive Agent that
 *   we destroy is easy to reason about; a second HTTP stack for the three session endpoints is not.
 */

/**
 * Consul refuses more than limits.http_max_conns_per_client (default 200) connections from one
 * address; several providers may share a host, so each stays well below it and queues the rest.
 */
const MAX_SOCKETS = 64;

export interface ConsulHttpOptions {
  readonly baseUrl: string;
  readonly token?: string | undefined;
  readonly datacenter?: string | undefined;
  /**
   * Socket idle timeout for non-blocking calls, in ms: a backstop only, every call also takes the
   * caller's signal.
   */
  readonly requestTimeoutMs?: number;
}

export interface ConsulResponse {
  readonly status: number;
  readonly body: string;
  /** X-Consul-Index, or 0n when absent. */
  readonly index: bigint;
}

export type Query = Record<string, string | number | boolean | undefined>;

/** A failed HTTP exchange (status >= 400 other than the ones a caller expects, or a network error). */
export class ConsulHttpError extends Error {
  constructor(
    message: string,
    readonly status: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ConsulHttpError';
  }

  /** Network errors and 5xx: what the Go client's monitor retries. */
  get retryable(): boolean {
    return this.status === undefined || this.status >= 500;
  }

  /**
   * A just-started agent refuses sessions until its node is in the catalog ("Missing node
   * registration"): transient, the agent registers itself within seconds.
   */
  get nodeNotRegisteredYet(): boolean {
    return this.status === 500 && /missing node registration/i.test(this.message);
  }
}

export class ConsulHttp {
  private readonly agent: Agent;
  private readonly base: URL;
  private readonly requestTimeoutMs: number;
  private closed = false;

  constructor(private readonly options: ConsulHttpOptions) {
    this.base = new URL(options.baseUrl);
    const https = this.base.protocol === 'https:';
    // Blocking queries hold a socket each; keep-alive saves a handshake per call.
    this.agent = https
      ? new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS })
      : new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  /**
   * One HTTP call. `blockingMs` (the query's wait) widens the socket timeout so a blocking query is
   * not cut short. Statuses in `accept` are returned; others throw ConsulHttpError.
   */
  async call(
    method: 'GET' | 'PUT' | 'DELETE',
    path: string,
    query: Query = {},
    init: { body?: string; signal?: AbortSignal; blockingMs?: number; accept?: readonly number[] } = {},
  ): Promise<ConsulResponse> {
    const url = new URL(path, this.base);
    if (this.options.datacenter) url.searchParams.set('dc', this.options.datacenter);
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || value === false) continue;
      // Flag-style parameters (?recurse, ?consistent) carry no value.
      if (value === true) url.searchParams.set(name, '');
      else url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {};
    if (this.options.token) headers['X-Consul-Token'] = this.options.token;
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    if (this.closed) throw new ConsulHttpError(`${method} ${url.pathname}: the provider is closed`, undefined);
    const response = await this.send(method, url, headers, init);
    const accept = init.accept ?? [200];
    if (!accept.includes(response.status)) {
      throw new ConsulHttpError(
        `${method} ${url.pathname}: HTTP ${response.status} ${response.body.trim().slice(0, 200)}`,
        response.status,
      );
    }
    return response;
  }

  /** Ends every socket at once, in-flight requests included; later calls fail without connecting. */
  close(): void {
    this.closed = true;
    this.agent.destroy();
  }

  private send(
    method: string,
    url: URL,
    headers: Record<string, string>,
    init: { body?: string; signal?: AbortSignal; blockingMs?: number },
  ): Promise<ConsulResponse> {
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // Consul adds up to wait/16 of jitter to a blocking query's wait.
    const timeout = init.blockingMs === undefined ? this.requestTimeoutMs : init.blockingMs * 1.1 + this.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      if (init.signal?.aborted) return reject(init.signal.reason);
      const req = request(url, { method, headers, agent: this.agent, signal: init.signal, timeout }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', (error) => reject(networkError(method, url, error, init.signal)));
        res.on('end', () => {
          const header = res.headers['x-consul-index'];
          const index = typeof header === 'string' && /^\d+$/.test(header) ? BigInt(header) : 0n;
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), index });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeout} ms`)));
      req.on('error', (error) => reject(networkError(method, url, error, init.signal)));
      req.end(init.body);
    });
  }
}

function networkError(method: string, url: URL, error: Error, signal: AbortSignal | undefined): unknown {
  if (signal?.aborted) return signal.reason;
  return new ConsulHttpError(`${method} ${url.pathname}: ${error.message}`, undefined, { cause: error });
}

/** JSON.parse with every numeric `"Flags"` field kept exact, as a decimal string. */
export function parseFlagSafe<T>(body: string): T {
  // A quote inside a JSON string is escaped (\"), so this cannot match inside a key or value.
  return JSON.parse(body.replace(/"Flags":\s*(\d+)/g, '"Flags":"$1"')) as T;
}

/** JSON.stringify that writes string `Flags` fields back as exact JSON numbers. */
export function stringifyFlagSafe(value: unknown): string {
  return JSON.stringify(value).replace(/"Flags":"(\d+)"/g, '"Flags":$1');
}
