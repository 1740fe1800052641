import { ErrorCode } from '@holdfast/core';
import { abortTime, codeOf, lostWithin, until } from '@holdfast/test-harness/helpers';
import { ferretdbBinary } from '@holdfast/test-harness/servers';
import { needLocalBinary, useBackend } from '@holdfast/test-harness/servers/vitest';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMongoProvider, type LockDocument, type PingDocument } from '../src/index.js';
import { readServerStatus, type ServerInfo } from '../src/server-info.js';
import { provider, providerWithBackend, SHORT_TTL_MS, testUrl } from './fixtures.js';
import { RestartableFerretdb } from './restartable-ferretdb.js';

const mongodb = await useBackend('mongodb');
/** The lease the test URL sets as lockExpiration: what a MongoDB-written lock document (no lease field) gets. */
const LEASE_MS = SHORT_TTL_MS;

/** MongoDB's distlock process id: `<host>:<port>:<epoch seconds>:<random signed 64-bit>`. */
const PROCESS_ID_PATTERN = /^[^:\s]+:\d+:\d+:-?\d+$/;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!mongodb.url)(`MongoDB distlock design (${mongodb.label})`, () => {
  const url = mongodb.url!;
  let raw: MongoClient;
  const locks = () => raw.db().collection<LockDocument>('locks');
  const pings = () => raw.db().collection<PingDocument>('lockpings');
  let keyCount = 0;
  const key = (label: string) => `distlock-test/${Date.now().toString(36)}/${label}-${++keyCount}`;

  /** A lock exactly as MongoDB itself writes it (no Holdfast fields), held by a process whose ping we control. */
  async function foreignLock(name: string, ping: Date): Promise<string> {
    const process = `config-host:27019:${Math.floor(Date.now() / 1000)}:${Date.now()}`;
    await locks().insertOne({
      _id: name,
      state: 2,
      process,
      ts: new ObjectId(),
      who: `${process}:Balancer`,
      why: 'Migrating chunk(s)',
      when: new Date(),
    } as LockDocument);
    await pings().insertOne({ _id: process, ping });
    return process;
  }

  beforeAll(async () => {
    raw = new MongoClient(url);
    await raw.connect();
  });
  afterAll(() => raw.close());

  test("documents have MongoDB's fields and types; the process id is <host>:<port>:<epoch seconds>:<random>", async () => {
    const { locks: locks$, backend } = providerWithBackend(url, { owner: 'report-job' });
    const name = key('shape');
    const lock = await locks$.tryAcquire(name, { reason: 'nightly report' });
    const processId = backend.processId;
    expect(processId).toMatch(PROCESS_ID_PATTERN);
    const [host, port, epoch] = processId.split(':');
    expect(host!.length).toBeGreaterThan(0);
    expect(Number(port)).toBe(process.pid);
    expect(Math.abs(Number(epoch) - Date.now() / 1000)).toBeLessThan(60);
    const doc = await locks().findOne({ _id: name });
    expect(doc).toMatchObject({
      _id: name,
      state: 2,
      process: processId,
      who: `${processId}:report-job`,
      why: 'nightly report',
      lease: locks$.capabilities.defaultTtlMs,
      renew: true,
    });
    expect(doc!.ts).toBeInstanceOf(ObjectId);
    expect(doc!.when).toBeInstanceOf(Date);
    expect(BigInt(doc!.fence!)).toBe(lock!.token);
    const ping = await pings().findOne({ _id: processId });
    expect(ping!.ping).toBeInstanceOf(Date);
    const info = await locks$.inspect(name);
    expect(info!.details).toMatchObject({
      state: 2,
      process: processId,
      why: 'nightly report',
      ts: doc!.ts.toHexString(),
      lastPing: ping!.ping.toISOString(),
    });
    await lock!.release();
    // Release keeps the document (and its fence) at state 0, as MongoDB's unlock does.
    expect(await locks().findOne({ _id: name })).toMatchObject({ state: 0, ts: doc!.ts, fence: doc!.fence });
    await locks$.close();
    expect(await pings().findOne({ _id: processId })).toBeNull();
  });

  test('a lock is expired only by two observations a lease apart with the ping unchanged, however old the ping', async () => {
    const { locks: contender, backend } = providerWithBackend(url);
    try {
      const name = key('two-observations');
      await foreignLock(name, new Date(Date.now() - 3_600_000));
      // First sight of this lock: nothing to compare with, so not expired, although its ping is an hour old.
      expect(await contender.tryAcquire(name)).toBeNull();
      await pause(LEASE_MS / 4);
      expect(await contender.tryAcquire(name)).toBeNull();
      await pause(LEASE_MS + 300);
      const taken = await contender.tryAcquire(name);
      expect(taken).not.toBeNull();
      expect((await locks().findOne({ _id: name }))?.process).toBe(backend.processId);
    } finally {
      await contender.close();
    }
  });

  test('a changing ping restarts the observation: a live holder is never taken over', async () => {
    const contender = provider(url);
    try {
      const name = key('live-ping');
      const holder = await foreignLock(name, new Date());
      expect(await contender.tryAcquire(name)).toBeNull();
      for (let i = 0; i < 3; i++) {
        await pause(LEASE_MS * 0.6);
        await pings().updateOne({ _id: holder }, { $currentDate: { ping: true } });
        await pause(LEASE_MS * 0.6);
        // More than a lease since the first observation, but the ping moved in between.
        expect(await contender.tryAcquire(name), `round ${i}`).toBeNull();
      }
      await pause(LEASE_MS + 300);
      expect(await contender.tryAcquire(name)).not.toBeNull();
    } finally {
      await contender.close();
    }
  });

  test('the server clock decides: a frozen or backwards server clock never expires a lock, whatever the local clock does', async () => {
    let offsetMs = 0;
    let frozenAt: number | undefined;
    const { locks: contender } = providerWithBackend(
      url,
      {},
      {
        readServerInfo: async (db): Promise<ServerInfo> => {
          const real = await readServerStatus(db);
          const time = frozenAt ?? real.serverTime.getTime() + offsetMs;
          return { ...real, serverTime: new Date(time) };
        },
      },
    );
    try {
      const name = key('server-clock');
      await foreignLock(name, new Date(0));
      const first = await readServerStatus(raw.db());
      frozenAt = first.serverTime.getTime();
      expect(await contender.tryAcquire(name)).toBeNull();
      await pause(LEASE_MS + 500);
      expect(await contender.tryAcquire(name), 'server clock frozen').toBeNull();
      frozenAt = undefined;
      offsetMs = -(LEASE_MS * 5);
      expect(await contender.tryAcquire(name), 'server clock went backwards').toBeNull();
      await pause(LEASE_MS + 500);
      expect(await contender.tryAcquire(name), 'still behind the first observation').toBeNull();
      offsetMs = 0;
      expect(await contender.tryAcquire(name), 'the server clock passed the first observation by more than the lease').not.toBeNull();
    } finally {
      await contender.close();
    }
  });

  test('an electionId change restarts the observation', async () => {
    let electionId = new ObjectId().toHexString();
    const { locks: contender } = providerWithBackend(
      url,
      {},
      { readServerInfo: async (db): Promise<ServerInfo> => ({ ...(await readServerStatus(db)), electionId }) },
    );
    try {
      const name = key('election');
      await foreignLock(name, new Date(0));
      expect(await contender.tryAcquire(name)).toBeNull();
      await pause(LEASE_MS + 300);
      electionId = new ObjectId().toHexString();
      expect(await contender.tryAcquire(name), 'a new primary: the old observation proves nothing').toBeNull();
      await pause(LEASE_MS / 2);
      expect(await contender.tryAcquire(name)).toBeNull();
      await pause(LEASE_MS / 2 + 300);
      expect(await contender.tryAcquire(name)).not.toBeNull();
    } finally {
      await contender.close();
    }
  });

  test('one ping per interval for the whole process, however many locks it holds', async () => {
    const pingCommands: number[] = [];
    const client = new MongoClient(url, { monitorCommands: true });
    const holder = provider(url, { client });
    client.on('commandStarted', (event) => {
      if (event.commandName === 'findAndModify' && event.command['findAndModify'] === 'lockpings') pingCommands.push(Date.now());
    });
    try {
      const prefix = key('many');
      const held = await Promise.all(Array.from({ length: 200 }, (_, i) => holder.tryAcquire(`${prefix}/${i}`, { ttlMs: 15_000 })));
      expect(held.every((lock) => lock !== null)).toBe(true);
      const since = Date.now();
      await pause(2000);
      const pingsInWindow = pingCommands.filter((at) => at >= since).length;
      // Interval 250 ms: about 8 pings in 2 s, never one per lock.
      expect(pingsInWindow).toBeGreaterThanOrEqual(4);
      expect(pingsInWindow).toBeLessThanOrEqual(10);
      expect(
        held
          .filter((lock) => lock!.signal.aborted)
          .map((lock) => String(lock!.signal.reason))
          .slice(0, 3),
      ).toEqual([]);
    } finally {
      await holder.close();
      await client.close();
    }
  });

  test('many instances starting at once on new collections all work (idempotent index creation)', async () => {
    const collection = `locks_${Date.now().toString(36)}`;
    const custom = Array.from({ length: 8 }, () =>
      createMongoProvider({ url: testUrl(url, `holdfastLocksCollection=${collection}&holdfastPingsCollection=${collection}_pings`) }),
    );
    try {
      const name = key('fresh');
      const grants = await Promise.all(custom.map((p) => p.tryAcquire(name)));
      expect(grants.filter((lock) => lock !== null)).toHaveLength(1);
      const names = (await raw.db().collection(collection).listIndexes().toArray()).map((index) => index.name).sort();
      expect(names).toEqual(['_id_', 'state_1_process_1', 'ts_1']);
      expect(
        await raw
          .db()
          .collection(collection)
          .countDocuments({ _id: name as never }),
      ).toBe(1);
    } finally {
      await Promise.all(custom.map((p) => p.close()));
    }
  });

  test('racing grabs of a free key: exactly one wins each round, tokens strictly increase', async () => {
    const contenders = Array.from({ length: 6 }, () => provider(url));
    try {
      const name = key('race');
      let last = 0n;
      for (let round = 0; round < 8; round++) {
        const grants = (await Promise.all(contenders.map((p) => p.tryAcquire(name)))).filter((lock) => lock !== null);
        expect(grants, `round ${round}`).toHaveLength(1);
        expect(grants[0]!.token).toBeGreaterThan(last);
        last = grants[0]!.token;
        await grants[0]!.release();
      }
    } finally {
      await Promise.all(contenders.map((p) => p.close()));
    }
  });
});

// Stopping and restarting a server needs a local one: the FerretDB binary (skip printed, or a failure under HOLDFAST_REQUIRE_BACKENDS).
const unlockQueueSkip = await needLocalBinary('ferretdb');
const ferretdb = await ferretdbBinary();

describe.skipIf(unlockQueueSkip !== null)('unlock retry queue and ping loss (a server stopped and restarted)', () => {
  let server: RestartableFerretdb;
  beforeAll(async () => {
    server = await RestartableFerretdb.start(ferretdb!);
  });
  afterAll(() => server?.stop());

  test('a failed unlock is queued and drained by the pinger once the server is back; a lock kept by failing pings is declared lost', async () => {
    const url = testUrl(`${server.url}?serverSelectionTimeoutMS=700&connectTimeoutMS=700`);
    const { locks: holder, backend } = providerWithBackend(url);
    const other = provider(url);
    const raw = new MongoClient(server.url, { serverSelectionTimeoutMS: 5000 });
    try {
      const released = await holder.tryAcquire('queue/released');
      const kept = await holder.tryAcquire('queue/kept');
      expect(released).not.toBeNull();
      await server.pause();
      const failure = await released!.release().then(
        () => null,
        (error: unknown) => error,
      );
      expect((failure as { code?: string } | null)?.code).toBe(ErrorCode.Backend);
      expect(backend.pendingUnlocks).toBe(1);
      // The holder cannot ping: its lock is lost before any contender could judge it expired.
      const lost = await lostWithin(kept!, 10_000, 'the holder that cannot ping is told');
      expect(codeOf(lost)).toBe(ErrorCode.Lost);
      await server.resume();
      const doc = () => raw.db().collection<LockDocument>('locks').findOne({ _id: 'queue/released' });
      // Queued: the failed release, and the lock declared lost while the holder could not ping.
      await until(() => backend.pendingUnlocks === 0, 10_000, 'the pinger drained the unlock queue', { everyMs: 50 });
      expect((await doc())?.state).toBe(0);
      expect((await raw.db().collection<LockDocument>('locks').findOne({ _id: 'queue/kept' }))?.state).toBe(0);
      expect(await other.tryAcquire('queue/released')).not.toBeNull();
    } finally {
      await Promise.allSettled([holder.close(), other.close(), raw.close()]);
    }
  });

  test('a server restarted without its data: the holder is told at its next holder check, not left believing it holds the lock', async () => {
    const url = testUrl(`${server.url}?serverSelectionTimeoutMS=700&connectTimeoutMS=700`);
    const holder = provider(url);
    const other = provider(url);
    try {
      const lock = await holder.tryAcquire('wiped/held');
      expect(lock).not.toBeNull();
      const lostAt = abortTime(lock!.signal);
      const restartedAt = performance.now();
      await server.restartEmpty();
      const backAt = performance.now();
      // The lock is free at once on the wiped server; the holder must hear of it within a few ping intervals (250 ms).
      await lostWithin(lock!, 5_000, 'the holder of a lock wiped by the restart is told');
      const toldAt = lostAt()!;
      console.info(
        `[wiped server] restart took ${Math.round(backAt - restartedAt)} ms; holder told ${Math.round(toldAt - backAt)} ms after the server was back`,
      );
      expect(toldAt).toBeGreaterThan(restartedAt);
      expect(toldAt - backAt).toBeLessThan(2_000);
      expect((lock!.signal.reason as { code?: string }).code).toBe(ErrorCode.Lost);
      expect(await other.tryAcquire('wiped/held')).not.toBeNull();
    } finally {
      await Promise.allSettled([holder.close(), other.close()]);
    }
  });
});
