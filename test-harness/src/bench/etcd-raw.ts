import { Agent, request } from 'node:http';
import { benchKey } from './measure.js';
import type { RoundTrip } from './side-by-side.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');
/** The end of the range of every key that begins with `prefix` (etcd's prefix range: last byte + 1). */
function prefixEnd(prefix: string): string {
  const bytes = Buffer.from(prefix);
  bytes[bytes.length - 1]! += 1;
  return bytes.toString('base64');
}

/**
 * Bare etcd v3 calls through its JSON gateway (HTTP/1.1 with keep-alive, on the client port): the
 * floor Holdfast's etcd rows are set against. The adapter speaks gRPC (HTTP/2) to the same server,
 * so the ratio compares one protocol's round trips, not the transports exactly.
 */
export class EtcdHttp {
  private readonly agent = new Agent({ keepAlive: true });

  constructor(private readonly base: string) {}

  /** A gateway call: POST of a JSON body, the JSON answer. */
  async call(path: string, body: unknown): Promise<Record<string, unknown>> {
    const text = await this.send('POST', path, JSON.stringify(body));
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  }

  /** A GET on the client port, e.g. `/metrics` (Prometheus text). */
  get(path: string): Promise<string> {
    return this.send('GET', path);
  }

  private send(method: 'GET' | 'POST', path: string, body?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(`${this.base}${path}`, { method, agent: this.agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 0) >= 400) reject(new Error(`${method} ${path}: HTTP ${res.statusCode}: ${text.slice(0, 200)}`));
          else resolve(text);
        });
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** A lease that the bench revokes at the end (60 s: it outlives any step). */
  async grantLease(): Promise<string> {
    return String((await this.call('/v3/lease/grant', { TTL: 60 }))['ID']);
  }

  close(): void {
    this.agent.destroy();
  }
}

/**
 * concurrency.Mutex's round trips for an uncontended lock: one Txn (create the contender key on the
 * session's lease if absent, read the oldest contender) and one DeleteRange to unlock.
 */
export function rawMutex(http: EtcdHttp, lease: string): RoundTrip {
  const dir = `${benchKey('raw-mutex')}/`;
  const key = b64(`${dir}${BigInt(lease).toString(16)}`);
  const txn = {
    compare: [{ key, target: 'CREATE', result: 'EQUAL', create_revision: '0' }],
    success: [
      { request_put: { key, value: '', lease } },
      { request_range: { key: b64(dir), range_end: prefixEnd(dir), sort_order: 'ASCEND', sort_target: 'CREATE', limit: '1' } },
    ],
    failure: [{ request_range: { key } }],
  };
  return {
    subject: 'raw gateway: Txn put-if-absent + DeleteRange (concurrency.Mutex, 2 round trips)',
    async run() {
      const answer = await http.call('/v3/kv/txn', txn);
      if (answer['succeeded'] !== true) throw new Error(`raw mutex key ${dir} unexpectedly held`);
      await http.call('/v3/kv/deleterange', { key });
    },
    close: async () => undefined,
  };
}
