import { parseArgs } from 'node:util';
import { type LockInfo, type LockProvider, redactUrl } from '@holdfast/core';
import { backendUrl, openProvider } from './backends.js';
import { durationFlag, parsingFlags } from './options.js';
import { UsageError } from './usage.js';
import { PlainScreen, TerminalScreen, type WatchScreen } from './watch-screen.js';
import { LeaseSpans, renderWatch, type WatchSnapshot } from './watch-view.js';
import { HolderWakeUps } from './watch-wakeups.js';

const DEFAULT_INTERVAL_MS = 2000;
/** Each refresh is one list() (a scan on some backends): a floor keeps a typo from hammering the server. */
const MIN_INTERVAL_MS = 100;
/** A live view that looks again less often than this is no longer live. */
const MAX_INTERVAL_MS = 10 * 60_000;
/** Bars count down between refreshes at this rate (no backend call: drawn from the last answer). */
const REPAINT_MS = 250;
/** A lease that ends is looked at again just after its end, when the backend has freed it. */
const AFTER_EXPIRY_MS = 50;

/**
 * `holdfast watch [prefix]`: a live view of the held locks. Refreshed by list() at --interval, at
 * the next lease end, and whenever observe() reports a listed key's holder changed.
 */
export async function watch(args: string[]): Promise<number> {
  const { values, positionals } = parsingFlags(() =>
    parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: { backend: { type: 'string' }, interval: { type: 'string' }, once: { type: 'boolean' } },
    }),
  );
  if (positionals.length > 1) throw new UsageError('watch takes at most one prefix');
  const intervalMs = durationFlag(values.interval, 'interval') ?? DEFAULT_INTERVAL_MS;
  if (intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS)
    throw new UsageError(`--interval must be between ${MIN_INTERVAL_MS}ms and ${MAX_INTERVAL_MS / 60_000}m`);
  const url = backendUrl(values.backend);
  const prefix = positionals[0] ?? '';
  const provider = await openProvider(url);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal).on('SIGHUP', onSignal);
  // A closed pipe (`holdfast watch | head`) ends the watch like Ctrl-C.
  process.stdout.on('error', onSignal);
  const screen: WatchScreen = values.once || !process.stdout.isTTY ? new PlainScreen(process.stdout) : new TerminalScreen(process.stdout);
  const wakeUps = new HolderWakeUps(provider);
  try {
    const title = `holdfast watch: ${redactUrl(url)}${prefix ? ` prefix "${prefix}"` : ''}, every ${intervalMs}ms${wakeUps.enabled ? ` and on ${provider.capabilities.wakeUp} wake-ups` : ''}`;
    // The first answer is awaited before any screen is drawn: a backend that does not answer is an
    // error (exit 69) on the normal screen, not a view of nothing.
    const locks = await untilStopped(provider.list({ prefix }), stop.signal);
    if (locks === undefined) return 0;
    const first: WatchSnapshot = { title, locks, listedAt: Date.now() };
    if (values.once) {
      screen.show(renderWatch(first, new LeaseSpans(), first.listedAt, screen));
      return 0;
    }
    await follow(provider, prefix, first, { screen, wakeUps, intervalMs, signal: stop.signal });
    return 0;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal).off('SIGHUP', onSignal);
    process.stdout.off('error', onSignal);
    screen.restore();
    const observersEnded = wakeUps.stop();
    await provider.close();
    await observersEnded;
  }
}

interface Following {
  readonly screen: WatchScreen;
  readonly wakeUps: HolderWakeUps;
  readonly intervalMs: number;
  readonly signal: AbortSignal;
}

/** Draws `first`, then refreshes until the signal aborts; backend failures are shown, not fatal. */
async function follow(
  provider: LockProvider,
  prefix: string,
  first: WatchSnapshot,
  { screen, wakeUps, intervalMs, signal }: Following,
): Promise<void> {
  const spans = new LeaseSpans();
  let snapshot = first;
  const draw = (): void => screen.show(renderWatch(snapshot, spans, Date.now(), screen));
  const accept = (next: WatchSnapshot): void => {
    snapshot = next;
    spans.update(next.locks, next.listedAt);
    wakeUps.follow(next.locks);
    draw();
  };
  const repaint = screen.live ? setInterval(draw, REPAINT_MS) : undefined;
  try {
    accept(first);
    while (!signal.aborted) {
      await nextRefresh(snapshot.locks, intervalMs, wakeUps, signal);
      if (signal.aborted) return;
      try {
        const locks = await untilStopped(provider.list({ prefix }), signal);
        if (locks === undefined) return;
        accept({ title: first.title, locks, listedAt: Date.now() });
      } catch (error) {
        if (signal.aborted) return;
        accept({ ...snapshot, failure: error instanceof Error ? error.message : String(error) });
      }
    }
  } finally {
    clearInterval(repaint);
  }
}

/** Waits for the interval, the next lease end, or a holder change, whichever comes first. */
async function nextRefresh(locks: readonly LockInfo[], intervalMs: number, wakeUps: HolderWakeUps, signal: AbortSignal): Promise<void> {
  const now = Date.now();
  const ends = locks.map((info) => info.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY).filter((end) => end > now);
  const waitMs = Math.min(intervalMs, Math.min(...ends) - now + AFTER_EXPIRY_MS);
  const round = new AbortController();
  const onStop = (): void => round.abort();
  signal.addEventListener('abort', onStop, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, waitMs))), wakeUps.changed(round.signal)]);
  } finally {
    clearTimeout(timer);
    round.abort();
    signal.removeEventListener('abort', onStop);
  }
}

/** `work`'s result, or undefined as soon as `signal` aborts (list() takes no signal; close() ends it). */
function untilStopped<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
