import { createLockProvider } from '@holdfast/core';
import { MongoClient, ObjectId } from 'mongodb';
import { within } from '../helpers/within.js';
import { postgresBinDir, startFerretdbOnPostgres } from '../servers/index.js';
import { benchServer } from './bench-server.js';
import { contentionTable } from './contention.js';
import { countedPass } from './counted.js';
import { crossProcessPair } from './cross-process.js';
import { RAW } from './goals.js';
import { handoffSideBySide, inProcessPair, phaseFor } from './handoff.js';
import { childHolder, holdMany } from './hold-many.js';
import { HolderProcess } from './holder-process.js';
import { holdfastSubject } from './holdfast.js';
import { benchKey } from './measure.js';
import { describeMongo } from './mongodb-server.js';
import { openAll } from './open-all.js';
import type { BenchSettings } from './settings.js';
import { lockRoundTrip, type RoundTrip, sideBySide } from './side-by-side.js';
import { Steps } from './steps.js';
import type { BenchModule, BenchRow } from './types.js';
import { mongoCommands } from './wire-parsers.js';

const runId = Math.random().toString(36).slice(2, 8);
const PING_INTERVAL_MS = 1000;
/** The adapter's default pollIntervalMs (a waiter without change streams polls at most this far apart): the hand-off phase. */
const POLL_MS = 500;
/** MongoDB's defaults, in collections of the run's own. */
const PARAMS = `holdfastLocksCollection=bench_${runId}&holdfastPingsCollection=bench_${runId}_pings`;
/**
 * The hold-many rows: a 1 s ping, so that the holding window spans several intervals, and fresh
 * collections (FerretDB slows down as a collection grows: the other rows' documents would count).
 */
const HOLD_PARAMS = `holdfastPingInterval=${PING_INTERVAL_MS}ms&holdfastLockExpiration=30s&holdfastLocksCollection=bench_${runId}_hold&holdfastPingsCollection=bench_${runId}_hold_pings`;
const GROUP = 'uncontended acquire+release';
/** The bench's own clean-up on the server, which a saturated server answers late or never. */
const CLEANUP_BOUND_MS = 60_000;
/** The subject of the hold-many rows on FerretDB's PostgreSQL backend. */
const ON_POSTGRES = 'holdfast mongodb, FerretDB on PostgreSQL';

/**
 * Holdfast's MongoDB adapter beside the bare driver calls it is built on, on one server in one run.
 * The server comes from HOLDFAST_BENCH_MONGODB_URL, else resolveBackend('mongodb') (FerretDB here); what
 * it is (mongod or FerretDB, replica set or not) is asked of the server itself.
 */
export const mongodbBench: BenchModule = {
  name: 'mongodb',
  async run(settings, log) {
    const server = await benchServer('mongodb');
    const withParams = (params: string): string => `${server.url}${server.url.includes('?') ? '&' : '?'}${params}`;
    const url = withParams(PARAMS);
    const raw = new MongoClient(server.url);
    try {
      const described = await describeMongo(raw);
      const holdfast = holdfastSubject('holdfast mongodb', () => createLockProvider(url), {
        pollPeriodMs: described.changeStreams ? 0 : POLL_MS,
        ...(described.changeStreams
          ? {}
          : { note: `no change streams on this server: waiters poll (pollIntervalMs ${POLL_MS} ms by default)` }),
      });
      log(described.label);
      const steps = new Steps(log, settings.steps);
      await steps.run('uncontended', async () => sideBySide(GROUP, [rawPair(raw), await lockRoundTrip(holdfast)], settings));
      await steps.run('commands per op', async () => {
        const pass = { group: GROUP, requestsMetric: 'commands per acquire+release', parser: mongoCommands, ops: settings.countedOps };
        const holdfastOn = (tapped: string) => lockRoundTrip(holdfastSubject(holdfast.subject, () => createLockProvider(tapped)));
        return [
          ...(await countedPass(RAW.mongodb, server.url, async (tapped) => rawPair(new MongoClient(tapped), true), pass)),
          ...(await countedPass(holdfast.subject, url, holdfastOn, pass)),
        ];
      });
      await steps.run('hand-off', async () => {
        const pairs = await openAll([() => inProcessPair(holdfast), () => crossProcessPair(url, holdfast)]);
        return handoffSideBySide('hand-off latency', pairs, phaseFor([holdfast]), settings);
      });
      await steps.run('contention', () => contentionTable([holdfast], settings));
      await steps.run('hold many', () => holdManyRows(withParams(HOLD_PARAMS), settings, 'holdfast mongodb', 8));
      // FerretDB on SQLite scans a collection on every read; its PostgreSQL backend is the one that holds many.
      if (described.ferretdb && (await postgresBinDir())) {
        await steps.run('hold many, FerretDB on PostgreSQL', () => holdManyOnPostgres(settings, log));
      }
      return { server: `${described.label} (${server.label})`, rows: steps.rows, failures: steps.failures };
    } finally {
      // Bounded: on a server still saturated by a failed step the bare driver (no socket timeout) would wait for ever.
      await within(dropBenchCollections(raw), CLEANUP_BOUND_MS, 'dropping the bench collections').catch(() => undefined);
      await within(raw.close(), CLEANUP_BOUND_MS, 'closing the bare driver client').catch(() => undefined);
      await server.stop();
    }
  },
};

/** The floor: grabLock (findAndModify upsert on {_id, state: 0}) then unlock by ts, two round trips. */
function rawPair(client: MongoClient, ownsClient = false): RoundTrip {
  const locks = client.db().collection<{ _id: string; state: number; ts: ObjectId }>(`bench_${runId}_raw`);
  const key = benchKey('raw', Math.random().toString(36).slice(2, 6));
  return {
    subject: RAW.mongodb,
    async run() {
      const ts = new ObjectId();
      const grabbed = await locks.findOneAndUpdate(
        { _id: key, state: 0 },
        { $set: { state: 2, ts }, $inc: { fence: 1 } },
        { upsert: true, returnDocument: 'after' },
      );
      if (!grabbed) throw new Error('raw bench key busy');
      await locks.findOneAndUpdate({ _id: key, ts }, { $set: { state: 0 } });
    },
    close: async () => (ownsClient ? client.close() : undefined),
  };
}

/** The hold-many rows on FerretDB over a PostgreSQL of the bench's own, both started and stopped here. */
async function holdManyOnPostgres(settings: BenchSettings, log: (line: string) => void): Promise<BenchRow[]> {
  const server = await startFerretdbOnPostgres();
  try {
    const client = new MongoClient(server.url);
    const described = await describeMongo(client).finally(() => client.close());
    log(`${described.label}, on a PostgreSQL of the bench's own`);
    return await holdManyRows(`${server.url}?${HOLD_PARAMS}`, settings, ON_POSTGRES, 16);
  } finally {
    await server.stop();
  }
}

/** Many locks held by a child process; its pings counted on the wire. The bench drops the collections after. */
async function holdManyRows(url: string, settings: BenchSettings, subject: string, concurrency: number): Promise<BenchRow[]> {
  const holder = HolderProcess.start(url, 'mongodb');
  try {
    const pings = async (): Promise<number> => {
      const [, ...json] = await holder.send('wire');
      const requests = JSON.parse(json.join(' ')) as Record<string, number>;
      return Object.entries(requests).reduce((sum, [name, n]) => (/^findAndModify \S+_pings$/.test(name) ? sum + n : sum), 0);
    };
    const calls = {
      metric: 'pings per ping interval',
      note: `interval ${PING_INTERVAL_MS} ms; counted on the wire`,
      perMs: PING_INTERVAL_MS,
      count: pings,
    };
    // A few calls in flight (FerretDB on SQLite runs them one by one, PostgreSQL a few at once): a queue of hundreds would outlast the per-call bound.
    const plan = {
      count: settings.hold,
      ttlMs: 30_000,
      windowMs: (settings.quick ? 2 : 5) * PING_INTERVAL_MS,
      budgetMs: settings.holdBudgetMs,
      concurrency,
    };
    return await holdMany(subject, childHolder(holder), plan, calls);
  } finally {
    await holder.kill();
  }
}

async function dropBenchCollections(client: MongoClient): Promise<void> {
  const names = (await client.db().listCollections({}, { nameOnly: true }).toArray())
    .map((c) => c.name)
    .filter((name) => name.startsWith(`bench_${runId}`));
  for (const name of names) await client.db().dropCollection(name);
}
