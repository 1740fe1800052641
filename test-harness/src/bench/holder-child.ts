/**
 * A lock holder in a process of its own, driven line by line over stdin by the bench: the waiter of
 * the cross-process hand-off rows is in the bench's process, and the holder of many locks is measured
 * alone (its CPU) while another provider works. Replies one line per command; "ERROR <message>" on failure.
 *
 *   acquire <key>                      -> HELD
 *   release                            -> RELEASED <when release() began, see now()>
 *   hold <prefix> <count> <ttlMs> <budgetMs> <concurrency> -> HOLDING <taken> <ms> [why it stopped early]
 *   cpu                                -> CPU <user+system microseconds so far>
 *   lost                               -> LOST <held locks whose signal aborted>
 *   wire                               -> WIRE <bytes received> <JSON of requests by name> (with a tap)
 */
import { createInterface } from 'node:readline';
import { createLockProvider, type Lock } from '@holdfast/core';
import { inProcessHolder } from './hold-many.js';
import { WAIT_MS } from './holdfast.js';
import { now } from './measure.js';
import { httpRequests, mongoCommands } from './wire-parsers.js';
import { WireTap } from './wire-tap.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as { url: string; tap?: 'http' | 'mongodb' };
const upstream = new URL(spec.url);
const tap = spec.tap
  ? await WireTap.start({ host: upstream.hostname, port: Number(upstream.port) }, spec.tap === 'http' ? httpRequests : mongoCommands)
  : undefined;
const provider = await createLockProvider(tap ? tap.through(spec.url) : spec.url);
let handed: Lock | undefined;
const many = inProcessHolder(provider);

const commands: Record<string, (args: string[]) => Promise<string>> = {
  async acquire([key]) {
    handed = await provider.acquire(key!, { waitMs: WAIT_MS });
    return 'HELD';
  },
  async release() {
    const at = now();
    await handed?.release();
    handed = undefined;
    return `RELEASED ${at}`;
  },
  async hold([prefix, count, ttlMs, budgetMs, concurrency]) {
    const plan = { count: Number(count), ttlMs: Number(ttlMs), budgetMs: Number(budgetMs), concurrency: Number(concurrency), windowMs: 0 };
    const { taken, ms, failure } = await many.hold(prefix!, plan);
    return `HOLDING ${taken} ${ms}${failure ? ` ${failure.replace(/\n/g, ' ')}` : ''}`;
  },
  cpu: async () => `CPU ${await many.cpuMicros()}`,
  lost: async () => `LOST ${await many.lost()}`,
  async wire() {
    return `WIRE ${tap?.counts.bytesFromServer ?? 0} ${JSON.stringify(Object.fromEntries(tap?.counts.requests ?? []))}`;
  },
};

// One command at a time, in order: the parent waits for each reply before it sends the next.
for await (const line of createInterface({ input: process.stdin })) {
  const [name, ...args] = line.trim().split(' ');
  const command = commands[name ?? ''];
  try {
    if (!command) throw new Error(`unknown command "${line}"`);
    process.stdout.write(`${await command(args)}\n`);
  } catch (error) {
    process.stdout.write(`ERROR ${(error as Error).message.replace(/\n/g, ' ')}\n`);
  }
}
await Promise.race([provider.close(), new Promise((resolve) => setTimeout(resolve, 10_000).unref())]);
await tap?.close();
process.exit(0);
