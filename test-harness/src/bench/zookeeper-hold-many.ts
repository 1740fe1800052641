import { fourLetterWord } from '../servers/zookeeper-probe.js';
import { holdManyInChild } from './hold-many.js';
import type { BenchSettings } from './settings.js';
import type { BenchRow } from './types.js';

/** The holder's session timeout: the provider proves its session every sixth of it, and the window spans several. */
const SESSION_TIMEOUT_MS = 3000;

/**
 * Many locks held by a child process: the time to take them, the holder's CPU, and the packets the
 * server received per session timeout while they are merely held. Every lock is an ephemeral node of
 * the provider's one session, so the count stays that of one session's pings, not one per lock.
 */
export function zookeeperHoldManyRows(url: string, port: number, settings: BenchSettings): Promise<BenchRow[]> {
  const plan = {
    count: settings.hold,
    ttlMs: SESSION_TIMEOUT_MS,
    windowMs: SESSION_TIMEOUT_MS * 3,
    budgetMs: settings.holdBudgetMs,
    concurrency: 64,
  };
  return holdManyInChild(`${url}?sessionTimeout=${SESSION_TIMEOUT_MS}ms`, 'holdfast zookeeper', plan, {
    metric: 'packets per session timeout',
    note: "every client's packets (mntr zk_packets_received): the holder's session proofs, the bench's idle client, the mntr reads",
    perMs: SESSION_TIMEOUT_MS,
    count: () => packetsReceived(port),
  });
}

/** Packets the server has received so far (`mntr`). */
async function packetsReceived(port: number): Promise<number> {
  const reply = await fourLetterWord(port, 'mntr');
  const value = /^zk_packets_received\s+(\d+)/m.exec(reply)?.[1];
  if (value === undefined) throw new Error(`no zk_packets_received in the mntr reply of 127.0.0.1:${port}`);
  return Number(value);
}
