import { setMaxListeners } from 'node:events';
import { within } from '../helpers/within.js';
import { percentile } from '../percentile.js';
import { benchKey, now, sleep } from './measure.js';
import type { BenchSettings } from './settings.js';
import type { BenchRow, LockClient, LockSubject, Release } from './types.js';

/**
 * Counts what the server did (Redis commands) over a slice of its own, apart from the timed slices:
 * counting can slow the server. start() resolves once counting runs; its result stops it and answers the counts.
 */
export interface ServerCounter {
  start(): Promise<() => Promise<ReadonlyMap<string, number>>>;
  /** The server's CPU time so far (user + system), in µs: read around each timed slice, which it does not slow. */
  cpuMicros?(): Promise<number>;
}

interface Tally {
  grants: number;
  ms: number;
  gaveUp: number;
  /** Grants of a key that another contender of this process still held (its release() had not begun). */
  overlaps: number;
  failedReleases: number;
  /** acquire() calls that threw (a backend failure under load), and the first reason. */
  failedAcquires: number;
  firstFailure?: string;
  readonly waits: number[];
  readonly perContender: number[];
  readonly counted: Map<string, number>;
  /** The server's CPU time over the timed slices (µs), when the counter can read it. */
  serverCpuMicros: number;
}

const DRAIN_BOUND_MS = 120_000;
/** Every provider's close() is bounded by its own closeTimeoutMs; this only guards against one that is not. */
const CLOSE_BOUND_MS = 60_000;

/**
 * The contention table: n contenders (each a client of its own) loop acquire -> hold for one turn of
 * the event loop -> release on one key,
 * and on `settings.keys` keys picked at random, for every n of `settings.contenders`. Subjects take
 * turns in two passes per cell so that load from elsewhere hits them alike.
 */
export async function contentionTable(subjects: LockSubject[], settings: BenchSettings, counter?: ServerCounter): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const keys of [1, settings.keys]) {
    const oneContender = new Map<LockSubject, number>();
    for (const n of settings.contenders) {
      const tallies = new Map(subjects.map((subject) => [subject, emptyTally(n)]));
      const keyOf = (subject: LockSubject) => keyPicker(benchKey('contention', subject.subject, `${n}x${keys}`), keys);
      // Clients of their own per cell: an idle client left open can still load the server (MongoDB providers ping).
      const clients = new Map<LockSubject, LockClient[]>();
      // Every client is registered as soon as it exists, and all warm-ups are settled before a failure
      // is thrown: a cell that fails (a warm-up timing out on a saturated server) still closes them all,
      // instead of leaving the rest open and loading the server under the next steps.
      const opened: LockClient[] = [];
      try {
        for (const subject of subjects) clients.set(subject, await warmClients(subject, n, opened));
        for (let pass = 0; pass < 2; pass++) {
          for (const subject of subjects) {
            const cpuBefore = await counter?.cpuMicros?.();
            await slice(clients.get(subject)!, keyOf(subject), settings.contentionMs / 2, tallies.get(subject)!);
            const cpuAfter = await counter?.cpuMicros?.();
            if (cpuBefore !== undefined && cpuAfter !== undefined) tallies.get(subject)!.serverCpuMicros += cpuAfter - cpuBefore;
          }
        }
        for (const subject of subjects) {
          const tally = tallies.get(subject)!;
          const rate = tally.grants / (tally.ms / 1000);
          if (n === 1) oneContender.set(subject, rate);
          rows.push(...cellRows(subject, n, keys, tally, rate, oneContender.get(subject)));
          if (counter?.cpuMicros && tally.grants > 0) rows.push(cpuRow(rows.at(-4)!, tally));
          if (counter && keys === 1) {
            const counted = emptyTally(n);
            await slice(clients.get(subject)!, keyOf(subject), settings.contentionMs / 2, counted, counter);
            rows.push(commandsRow(rows.at(-4)!, counted));
          }
        }
      } finally {
        await within(Promise.allSettled(opened.map((client) => client.close())), CLOSE_BOUND_MS, `${opened.length} clients to close`);
      }
    }
  }
  return rows;
}

/**
 * `n` clients that have each taken and released a lock once: connections and first-use setup are not
 * part of the slices. Each client goes into `opened` once it exists; the first failure is thrown only
 * after every warm-up has settled, so that no client is created after the caller closed `opened`.
 */
async function warmClients(subject: LockSubject, n: number, opened: LockClient[]): Promise<LockClient[]> {
  const warmed = await Promise.allSettled(
    Array.from({ length: n }, async () => {
      const client = await subject.client();
      opened.push(client);
      const release = await client.tryOnce(benchKey('contention-warm-up', subject.subject, Math.random().toString(36).slice(2, 8)));
      await release?.();
      return client;
    }),
  );
  const failed = warmed.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return warmed.map((result) => (result as PromiseFulfilledResult<LockClient>).value);
}

function emptyTally(n: number): Tally {
  return {
    grants: 0,
    ms: 0,
    gaveUp: 0,
    overlaps: 0,
    failedReleases: 0,
    failedAcquires: 0,
    waits: [],
    perContender: Array.from({ length: n }, () => 0),
    counted: new Map(),
    serverCpuMicros: 0,
  };
}

function keyPicker(prefix: string, keys: number): () => string {
  if (keys === 1) return () => `${prefix}/key`;
  return () => `${prefix}/key-${Math.floor(Math.random() * keys)}`;
}

async function slice(clients: LockClient[], keyOf: () => string, ms: number, tally: Tally, counter?: ServerCounter): Promise<void> {
  const stop = new AbortController();
  setMaxListeners(clients.length + 10, stop.signal); // every waiting contender listens to it
  const stopCounting = await counter?.start();
  const start = now();
  const end = start + ms;
  const holders = new Map<string, number>();
  // The time check as well as the signal: a backend that answers in microtasks (memory) would never let the timer fire.
  const loops = clients.map(async (client, i) => {
    while (!stop.signal.aborted && now() < end) {
      const asked = now();
      const key = keyOf();
      let release: Release | null;
      try {
        release = await client.acquire(key, stop.signal);
      } catch (error) {
        tally.failedAcquires++;
        tally.firstFailure ??= (error as Error).message;
        await sleep(10); // a backend that fails fast must not spin
        continue;
      }
      if (!release) {
        if (!stop.signal.aborted) tally.gaveUp++;
        continue;
      }
      const at = now();
      if (at <= end) {
        tally.waits.push(at - asked);
        tally.perContender[i]!++;
        tally.grants++;
      }
      const holding = (holders.get(key) ?? 0) + 1;
      if (holding > 1) tally.overlaps++;
      holders.set(key, holding);
      await new Promise(setImmediate); // held for one turn of the event loop: a double grant would show here
      holders.set(key, holders.get(key)! - 1);
      await release().catch(() => tally.failedReleases++);
    }
  });
  const failed = Promise.all(loops).then(() => undefined);
  failed.catch(() => undefined); // awaited below; a failing contender is reported there
  await sleep(ms);
  const counted = await stopCounting?.();
  stop.abort();
  tally.ms += now() - start;
  await within(failed, DRAIN_BOUND_MS, `${clients.length} contenders to finish after the slice`);
  for (const [name, calls] of counted ?? []) tally.counted.set(name, (tally.counted.get(name) ?? 0) + calls);
}

function cellRows(subject: LockSubject, n: number, keys: number, tally: Tally, rate: number, oneRate: number | undefined): BenchRow[] {
  const group = `contention: ${n} contender${n === 1 ? '' : 's'} on ${keys === 1 ? 'one key' : `${keys} keys`}`;
  const base = { group, subject: subject.subject };
  const notes = [
    n > 1 && oneRate ? `x${(rate / oneRate).toFixed(2)} of its 1-contender rate` : '',
    tally.gaveUp > 0 ? `${tally.gaveUp} waits gave up` : '',
    tally.overlaps > 0 ? `${tally.overlaps} grants while another contender held the key` : '',
    tally.failedReleases > 0 ? `${tally.failedReleases} releases failed` : '',
    tally.failedAcquires > 0 ? `${tally.failedAcquires} acquires failed (${tally.firstFailure})` : '',
  ].filter(Boolean);
  return [
    { ...base, metric: 'grants/s', value: rate, unit: 'grants/s', ...(notes.length > 0 ? { note: notes.join('; ') } : {}) },
    { ...base, metric: 'wait p50', value: percentile(tally.waits, 50), unit: 'ms' },
    { ...base, metric: 'wait p99', value: percentile(tally.waits, 99), unit: 'ms' },
    {
      ...base,
      metric: 'busiest share',
      value: (Math.max(...tally.perContender) / tally.grants) * 100,
      unit: '%',
      note: `fair: ${(100 / n).toFixed(1)} %`,
    },
  ];
}

/** Commands sent per grant in a counted slice; commands that scripts ran inside the server are noted apart. */
function commandsRow(cell: BenchRow, tally: Tally): BenchRow {
  const perGrant = (calls: number): string => (calls / tally.grants).toFixed(1);
  const sorted = [...tally.counted].sort((a, b) => b[1] - a[1]);
  const sent = sorted.filter(([name]) => !name.startsWith(IN_SCRIPTS));
  const inScripts = sorted.filter(([name]) => name.startsWith(IN_SCRIPTS)).reduce((sum, [, calls]) => sum + calls, 0);
  const total = sent.reduce((sum, [, calls]) => sum + calls, 0);
  const top = sent.slice(0, 5).map(([name, calls]) => `${perGrant(calls)} ${name}`);
  const note = `${top.join(', ')}; ${perGrant(inScripts)} more inside scripts; ${tally.grants} grants counted in a slice of their own`;
  return { group: cell.group, subject: cell.subject, metric: 'commands per grant', value: total / tally.grants, unit: 'commands', note };
}

/**
 * The server's CPU per grant over the timed slices, from its own counters (Redis: INFO cpu): what the
 * lock costs everyone else on the server. Includes the releases and the busy answers of the cell.
 */
function cpuRow(cell: BenchRow, tally: Tally): BenchRow {
  const note = `${(tally.serverCpuMicros / 1000).toFixed(0)} ms of server CPU over ${tally.grants} grants in ${(tally.ms / 1000).toFixed(1)} s`;
  return {
    group: cell.group,
    subject: cell.subject,
    metric: 'server CPU per grant',
    value: tally.serverCpuMicros / tally.grants,
    unit: 'µs',
    note,
  };
}

/** How a ServerCounter names commands that a script ran inside the server (not sent by a client). */
export const IN_SCRIPTS = 'in-script ';
