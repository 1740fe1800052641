import type { EtcdHttp } from './etcd-raw.js';
import { holdManyInChild } from './hold-many.js';
import type { BenchSettings } from './settings.js';
import type { BenchRow } from './types.js';

/** A 3 s lease, kept alive every TTL/3: the window spans several keep-alives. */
const TTL_MS = 3000;

/**
 * Many locks held by a child process on one etcd member: the time to take them, the holder's CPU, and
 * the keep-alive messages etcd received per TTL while they are merely held. Every lock of one TTL
 * shares the provider's one lease, so the count stays that of one lease (3 per TTL), not one per lock.
 */
export function etcdHoldManyRows(url: string, http: EtcdHttp, settings: BenchSettings): Promise<BenchRow[]> {
  const plan = { count: settings.hold, ttlMs: TTL_MS, windowMs: TTL_MS * 3, budgetMs: settings.holdBudgetMs, concurrency: 64 };
  return holdManyInChild(url, 'holdfast etcd', plan, {
    metric: 'lease keep-alives per TTL',
    note: 'LeaseKeepAlive messages the member received from every client (grpc_server_msg_received_total)',
    perMs: TTL_MS,
    count: () => keepAlivesReceived(http),
  });
}

/** LeaseKeepAlive messages the member has received so far, from its Prometheus counters. */
export async function keepAlivesReceived(http: EtcdHttp): Promise<number> {
  const text = await http.get('/metrics');
  const line = text.split('\n').find((l) => l.startsWith('grpc_server_msg_received_total{') && l.includes('grpc_method="LeaseKeepAlive"'));
  if (!line) throw new Error('etcd /metrics has no grpc_server_msg_received_total for LeaseKeepAlive');
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}
