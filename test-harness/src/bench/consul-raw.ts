import { Agent, request } from 'node:http';
import { benchKey } from './measure.js';
import type { RoundTrip } from './side-by-side.js';

const LOCK_FLAG = '3304740253564472344';

/**
 * Bare Consul HTTP calls over node:http with keep-alive (the adapter's transport, so that a ratio
 * compares protocols): the floors Holdfast's Consul rows are set against.
 */
export class ConsulHttp {
  private readonly agent = new Agent({ keepAlive: true });

  constructor(private readonly base: string) {}

  call(method: 'GET' | 'PUT' | 'DELETE', path: string, body?: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = request(`${this.base}${path}`, { method, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const status = res.statusCode ?? 0;
          if (status >= 400 && status !== 404 && status !== 409) reject(new Error(`${method} ${path}: HTTP ${status}`));
          else resolve(text ? JSON.parse(text) : null);
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async createSession(): Promise<string> {
    return ((await this.call('PUT', '/v1/session/create', JSON.stringify({ TTL: '60s', LockDelay: '1s' }))) as { ID: string }).ID;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** The floor of Holdfast's protocol: one transaction to lock, one to unlock and delete. */
export function rawTxn(http: ConsulHttp, session: string): RoundTrip {
  const key = benchKey('raw-txn');
  const lock = `[{"KV":{"Verb":"check-not-exists","Key":"${key}"}},{"KV":{"Verb":"lock","Key":"${key}","Session":"${session}","Flags":${LOCK_FLAG}}}]`;
  const unlock = `[{"KV":{"Verb":"unlock","Key":"${key}","Session":"${session}"}},{"KV":{"Verb":"delete","Key":"${key}"}}]`;
  return {
    subject: 'raw HTTP: txn lock + txn unlock/delete (2 round trips)',
    async run() {
      await http.call('PUT', '/v1/txn', lock);
      await http.call('PUT', '/v1/txn', unlock);
    },
    close: async () => undefined,
  };
}

/** The Go client's round trips: read (flags check), ?acquire, ?release. */
export function rawGoProtocol(http: ConsulHttp, session: string): RoundTrip {
  const key = benchKey('raw-go');
  return {
    subject: 'raw HTTP: GET + ?acquire + ?release (Go client, 3 round trips)',
    async run() {
      await http.call('GET', `/v1/kv/${key}`);
      await http.call('PUT', `/v1/kv/${key}?acquire=${session}&flags=${LOCK_FLAG}`);
      await http.call('PUT', `/v1/kv/${key}?release=${session}&flags=${LOCK_FLAG}`);
    },
    close: async () => undefined,
  };
}
