import { within } from '../helpers/within.js';
import { benchKey, now, sleep, summarize } from './measure.js';
import type { BenchSettings } from './settings.js';
import type { BenchRow, LockSubject, Release } from './types.js';

/** Time a just-started wait gets to reach the server before the random phase begins. */
const SETTLE_MS = 5;
const ROUND_BOUND_MS = 60_000;
/** The phase for groups whose every subject is woken by the server: it still spreads the release times. */
export const EVENT_PHASE_MS = 50;

/** The random phase for a group: the slowest subject's poll period (EVENT_PHASE_MS when none polls). */
export function phaseFor(subjects: readonly LockSubject[]): number {
  return Math.max(EVENT_PHASE_MS, ...subjects.map((subject) => subject.pollPeriodMs));
}

/** A holder and a waiter of one key: what a hand-off round needs. */
export interface HandoffPair {
  readonly subject: string;
  readonly note?: string;
  /** Takes the key; the returned function releases it and answers when the release began (see now()). */
  hold(): Promise<() => Promise<number>>;
  /** Waits for the key, which is held. */
  wait(): Promise<Release>;
  close(): Promise<void>;
}

/** Two clients of one library on a key of their own: one holds, the other waits. */
export async function inProcessPair(subject: LockSubject): Promise<HandoffPair> {
  const holder = await subject.client();
  const waiter = await closingOnFailure(subject.client(), () => holder.close());
  const key = benchKey('handoff', subject.subject);
  const never = new AbortController().signal;
  return {
    subject: subject.subject,
    ...(subject.note ? { note: subject.note } : {}),
    async hold() {
      const release = await holder.acquire(key, never);
      if (!release) throw new Error(`${subject.subject}: the holder did not get ${key}`);
      return async () => {
        const at = now();
        await release();
        return at;
      };
    },
    async wait() {
      const release = await waiter.acquire(key, never);
      if (!release) throw new Error(`${subject.subject}: the waiter gave up on ${key}`);
      return release;
    },
    close: async () => void (await Promise.allSettled([holder.close(), waiter.close()])),
  };
}

/** `work`'s value; if it fails, `cleanUp` runs (its own failure ignored) before the failure is passed on. */
export async function closingOnFailure<T>(work: Promise<T>, cleanUp: () => Promise<unknown>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    await cleanUp().catch(() => undefined);
    throw error;
  }
}

/**
 * Hand-off latency, release() start -> the waiter holds the lock, for several subjects in
 * alternating rounds. Before each release the holder pauses for a random phase over a whole
 * `phaseMs` (the slowest subject's poll period), so a polling waiter is caught at every point of its
 * cycle rather than always just after a retry.
 */
export async function handoffSideBySide(
  group: string,
  pairs: HandoffPair[],
  phaseMs: number,
  settings: BenchSettings,
): Promise<BenchRow[]> {
  const samples = pairs.map((): number[] => []);
  try {
    for (let round = 0; round < settings.rounds; round++) {
      for (const [i, pair] of pairs.entries()) {
        samples[i]!.push(await within(oneRound(pair, phaseMs), ROUND_BOUND_MS, `${pair.subject}: hand-off round ${round}`));
      }
    }
  } finally {
    await Promise.allSettled(pairs.map((pair) => pair.close()));
  }
  return pairs.flatMap((pair, i) => {
    const { p50, p99 } = summarize(samples[i]!);
    const note = [pair.note, `${samples[i]!.length} rounds, release after ${SETTLE_MS} ms + a random 0-${phaseMs} ms`]
      .filter(Boolean)
      .join('; ');
    return [
      { group, subject: pair.subject, metric: 'p50', value: p50, unit: 'ms', note },
      { group, subject: pair.subject, metric: 'p99', value: p99, unit: 'ms' },
    ];
  });
}

async function oneRound(pair: HandoffPair, phaseMs: number): Promise<number> {
  const release = await pair.hold();
  let releasing = false;
  const granted = pair.wait().then((releaseNext) => ({ releaseNext, at: now(), early: !releasing }));
  granted.catch(() => undefined); // awaited below; this only keeps a failure during the pause from going unhandled
  await sleep(SETTLE_MS + Math.random() * phaseMs);
  releasing = true;
  const released = await release();
  const { releaseNext, at, early } = await granted;
  await releaseNext();
  if (early) throw new Error(`${pair.subject}: the waiter was granted the lock while the holder still held it`);
  return at - released;
}
