import { Agent, request } from 'node:http';
import { createLockProvider, type LockProvider } from '@holdfast/core';
import { benchServer } from './bench-server.js';
import { opsPerSecond } from './measure.js';
import { handoff, holdMany, uncontended } from './procedures.js';
import type { BenchModule, BenchRow } from './types.js';

const runId = Math.random().toString(36).slice(2, 8);
const LOCK_FLAG = '3304740253564472344';
const UNCONTENDED = 'uncontended acquire+release';

/**
 * Holdfast on a Consul agent beside the bare HTTP round trips a lock needs, in one run. Consul comes
 * from HOLDFAST_BENCH_CONSUL_URL (consul://host:port), else resolveBackend('consul') (a dev agent).
 * HOLDFAST_BENCH_CONSUL_HOLD (default 10000) sets how many locks the hold-many rows take.
 */
export const consulBench: BenchModule = {
  name: 'consul',
  async run() {
    const server = await benchServer('consul');
    const url = server.url;
    const http = `http://${new URL(url).host}`;
    const lockUrl = `${url}?lockDelay=1s&prefix=holdfast-bench`;
    const create = (): Promise<LockProvider> => createLockProvider(lockUrl);
    const count = Number(process.env['HOLDFAST_BENCH_CONSUL_HOLD'] ?? 10_000);
    try {
      const session = await createSession(http);
      const rows = [
        await rawTxn(http, session),
        await rawGoProtocol(http, session),
        await uncontended('holdfast consul', create),
        ...(await handoff('holdfast consul', create, 100)),
      ];
      await put(http, `/v1/session/destroy/${session}`);
      const counter = countRequests();
      try {
        // ttl 20 s = a 10 s session renewed every 5 s: the window covers 4 renew periods.
        const held = await holdMany('holdfast consul', create, { count, ttlMs: 20_000, windowMs: 20_000 }, async () => counter.renews);
        const note = 'PUT /v1/session/renew calls this process sent';
        rows.push(...held.map((row) => (row.metric === 'backend calls per TTL' ? { ...row, metric: 'session renews per TTL', note } : row)));
      } finally {
        counter.stop();
      }
      return rows;
    } finally {
      rawAgent.destroy();
      await server.stop();
    }
  },
};

/** The raw rows use the same transport as the adapter (node:http, keep-alive) so the ratio compares protocols. */
const rawAgent = new Agent({ keepAlive: true });

function call(method: 'GET' | 'PUT', http: string, path: string, body?: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(`${http}${path}`, { method, agent: rawAgent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        if ((res.statusCode ?? 0) >= 400 && res.statusCode !== 404 && res.statusCode !== 409) reject(new Error(`${method} ${path}: HTTP ${res.statusCode}`));
        else resolve(text ? JSON.parse(text) : null);
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const put = (http: string, path: string, body?: string): Promise<unknown> => call('PUT', http, path, body);

async function createSession(http: string): Promise<string> {
  return ((await put(http, '/v1/session/create', JSON.stringify({ TTL: '60s', LockDelay: '1s' }))) as { ID: string }).ID;
}

/** The floor of Holdfast's protocol: one transaction to lock, one to unlock and delete. */
async function rawTxn(http: string, session: string): Promise<BenchRow> {
  const key = `holdfast-bench/${runId}/raw-txn`;
  const lock = `[{"KV":{"Verb":"check-not-exists","Key":"${key}"}},{"KV":{"Verb":"lock","Key":"${key}","Session":"${session}","Flags":${LOCK_FLAG}}}]`;
  const unlock = `[{"KV":{"Verb":"unlock","Key":"${key}","Session":"${session}"}},{"KV":{"Verb":"delete","Key":"${key}"}}]`;
  const ops = await opsPerSecond(async () => {
    await put(http, '/v1/txn', lock);
    await put(http, '/v1/txn', unlock);
  });
  return { group: UNCONTENDED, subject: 'raw HTTP: txn lock + txn unlock/delete (2 round trips)', metric: 'ops/s', value: ops, unit: 'ops/s' };
}

/** The Go client's round trips: read (flags check), ?acquire, ?release. */
async function rawGoProtocol(http: string, session: string): Promise<BenchRow> {
  const key = `holdfast-bench/${runId}/raw-go`;
  const ops = await opsPerSecond(async () => {
    await call('GET', http, `/v1/kv/${key}`);
    await put(http, `/v1/kv/${key}?acquire=${session}&flags=${LOCK_FLAG}`);
    await put(http, `/v1/kv/${key}?release=${session}&flags=${LOCK_FLAG}`);
  });
  return { group: UNCONTENDED, subject: 'raw HTTP: GET + ?acquire + ?release (Go client, 3 round trips)', metric: 'ops/s', value: ops, unit: 'ops/s' };
}

/**
 * Counts this process's session renew requests by watching node:http's Agent (the adapter's
 * transport). The agent's own metrics are per-interval samples, not counters, so we count here.
 */
function countRequests(): { readonly renews: number; stop(): void } {
  type AddRequest = (this: Agent, req: { path?: string }, ...rest: unknown[]) => unknown;
  const proto = Agent.prototype as unknown as { addRequest: AddRequest };
  const original = proto.addRequest;
  const state = { renews: 0 };
  proto.addRequest = function (req, ...rest) {
    if (req.path?.startsWith('/v1/session/renew/')) state.renews++;
    return original.call(this, req, ...rest);
  };
  return {
    get renews() {
      return state.renews;
    },
    stop: () => {
      proto.addRequest = original;
    },
  };
}

