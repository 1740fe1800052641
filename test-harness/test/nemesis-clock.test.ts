import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface, type Interface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, within } from '../src/helpers/index.js';
import { FakeClock } from '../src/nemesis/clock.js';

/** A process under the fake clock that answers each line on stdin with its Date.now() and performance.now(). */
const ECHO_CLOCK = `require('node:readline').createInterface({ input: process.stdin }).on('line', () => console.log(Date.now() + ' ' + performance.now()))`;

describe('the nemesis clock', () => {
  let clock: FakeClock;
  let child: ChildProcess;
  let lines: Interface;

  const skew = async (): Promise<{ wallMs: number; monotonic: number }> => {
    const reply = once(lines, 'line');
    const before = Date.now();
    child.stdin!.write('\n');
    const [line] = (await within(reply, 10_000, 'the clock child to answer')) as [string];
    const [wall, monotonic] = line.split(' ').map(Number) as [number, number];
    return { wallMs: wall - (before + Date.now()) / 2, monotonic };
  };

  beforeAll(async () => {
    clock = new FakeClock();
    child = spawn(process.execPath, ['-e', ECHO_CLOCK], { env: { ...process.env, ...clock.env() }, stdio: ['pipe', 'pipe', 'inherit'] });
    lines = createInterface({ input: child.stdout! });
  });
  afterAll(() => {
    child?.kill('SIGKILL');
    clock?.remove();
  });

  it('starts on the real time', async () => {
    expect(Math.abs((await skew()).wallMs)).toBeLessThan(500);
  });

  it('jumps forward during the run, and the process sees it within a couple of seconds', async () => {
    clock.jump(3_600_000);
    await until(async () => Math.abs((await skew()).wallMs - 3_600_000) < 500, 5000, 'the child to see the clock an hour ahead', {
      everyMs: 100,
    });
    expect(clock.offsetMs).toBe(3_600_000);
  });

  it('jumps back past the real time, leaving the monotonic clock alone', async () => {
    const { monotonic: before } = await skew();
    clock.jump(-3_900_000);
    await until(async () => Math.abs((await skew()).wallMs + 300_000) < 500, 5000, 'the child to see the clock 5 minutes behind', {
      everyMs: 100,
    });
    const { monotonic: after } = await skew();
    expect(after).toBeGreaterThanOrEqual(before);
    expect(after - before).toBeLessThan(10_000);
  });

  it('runs fast when told to', async () => {
    clock.reset();
    clock.rate(10);
    let first = 0;
    await until(
      async () => {
        const a = await skew();
        await new Promise((resolve) => setTimeout(resolve, 300));
        const b = await skew();
        first = b.wallMs - a.wallMs;
        return first > 1500;
      },
      10_000,
      'the child clock to gain about 9 ms per real ms',
    );
    expect(first).toBeGreaterThan(1500);
  });
});
