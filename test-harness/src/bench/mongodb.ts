import type { EventEmitter } from 'node:events';
import { createLockProvider, type LockProvider } from '@holdfast/core';
import { MongoClient, ObjectId } from 'mongodb';
import { benchServer } from './bench-server.js';
import { opsPerSecond } from './measure.js';
import { handoff, holdMany, uncontended } from './procedures.js';
import type { BenchModule, BenchRow } from './types.js';

const runId = Math.random().toString(36).slice(2, 8);
const PING_INTERVAL_MS = 1000;
/** MongoDB's defaults except a 1 s ping, so that the holding window spans several intervals. */
const PARAMS = `holdfastPingInterval=${PING_INTERVAL_MS}ms&holdfastLockExpiration=30s&holdfastLocksCollection=bench_${runId}&holdfastPingsCollection=bench_${runId}_pings`;

/**
 * Holdfast's MongoDB adapter next to the bare driver calls it is built on, on one server in one run.
 * The server comes from HOLDFAST_BENCH_MONGODB_URL, else resolveBackend('mongodb') (FerretDB here).
 */
export const mongodbBench: BenchModule = {
  name: 'mongodb',
  async run() {
    const server = await benchServer('mongodb');
    const baseUrl = server.url;
    const url = `${baseUrl}${baseUrl.includes('?') ? '&' : '?'}${PARAMS}`;
    const raw = new MongoClient(baseUrl);
    const counter = new CommandCounter();
    const create = (): Promise<LockProvider> => createLockProvider(url);
    const counted = async (): Promise<LockProvider> => {
      const provider = await createLockProvider(url, { adapter: { clientOptions: { monitorCommands: true } } });
      counter.watch((provider as unknown as { mongo: { client: EventEmitter } }).mongo.client);
      return provider;
    };
    const onFerretDb = server.label.includes('FerretDB');
    const label = onFerretDb ? 'holdfast mongodb (FerretDB)' : 'holdfast mongodb';
    // FerretDB scans every lock document for the holder check: 10k locks take many minutes there.
    const holdCount = Number(process.env['HOLDFAST_BENCH_MONGODB_LOCKS'] ?? (onFerretDb ? 2_000 : 10_000));
    try {
      const rows = [
        await rawPair(raw),
        await uncontended(label, create),
        ...(await handoff(label, create, 40)),
        ...(await holdMany(label, counted, { count: holdCount, ttlMs: 30_000, windowMs: 5 * PING_INTERVAL_MS }, async () => counter.snapshot())),
      ];
      rows.push(counter.pingRow(label));
      return rows;
    } finally {
      await raw.close();
      await server.stop();
    }
  },
};

/** The floor: grabLock (findAndModify upsert on {_id, state: 0}) then unlock by ts, two round trips. */
async function rawPair(client: MongoClient): Promise<BenchRow> {
  const locks = client.db().collection<{ _id: string; state: number; ts: ObjectId }>(`bench_${runId}_raw`);
  const key = `holdfast-bench/${runId}/raw`;
  const ops = await opsPerSecond(async () => {
    const ts = new ObjectId();
    const grabbed = await locks.findOneAndUpdate({ _id: key, state: 0 }, { $set: { state: 2, ts }, $inc: { fence: 1 } }, { upsert: true, returnDocument: 'after' });
    if (!grabbed) throw new Error('raw bench key busy');
    await locks.findOneAndUpdate({ _id: key, ts }, { $set: { state: 0 } });
  });
  return { group: 'uncontended acquire+release', subject: 'raw driver (grab + unlock findAndModify)', metric: 'ops/s', value: ops, unit: 'ops/s' };
}

/** Counts the commands a provider's client sends, and its pings, between holdMany's two snapshots. */
class CommandCounter {
  private commands = 0;
  private pings = 0;
  private readonly snapshots: { at: number; pings: number }[] = [];

  watch(client: EventEmitter): void {
    client.on('commandStarted', (event: { commandName: string; command: Record<string, unknown> }) => {
      this.commands++;
      if (event.commandName === 'findAndModify' && String(event.command['findAndModify']).endsWith('_pings')) this.pings++;
    });
  }

  snapshot(): number {
    this.snapshots.push({ at: performance.now(), pings: this.pings });
    return this.commands;
  }

  pingRow(subject: string): BenchRow {
    const [before, after] = this.snapshots;
    const intervals = before && after ? (after.at - before.at) / PING_INTERVAL_MS : Number.NaN;
    const value = before && after ? (after.pings - before.pings) / intervals : Number.NaN;
    return { group: 'hold many locks', subject, metric: 'pings per ping interval', value, unit: 'pings', note: `interval ${PING_INTERVAL_MS} ms` };
  }
}
