// `holdfast watch` in a real terminal (tmux) against real servers: locks taken and released by the
// test appear and go, Ctrl-C and SIGTERM end it with exit 0 and the shell's screen back.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createLockProvider, type LockProvider } from '@holdfast/core';
import { until } from '@holdfast/test-harness/helpers';
import { type UsedBackend, useBackend } from '@holdfast/test-harness/servers/vitest';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TmuxPane } from './tmux.js';

const BIN = fileURLToPath(new URL('../bin/holdfast.js', import.meta.url));
/** Node's start, the adapter's load and the first list() on a machine at a load of 20 and more. */
const VIEW_MS = 20_000;
/** A release must show long before the 10-minute interval: only the backend's wake-up explains it. */
const WAKE_MS = 10_000;
/** Leases outlast the test, so no lease end triggers a refresh that a wake-up should have. */
const TTL_MS = 120_000;
/** close() is bounded by 5 s by default; the rest is the loaded machine. */
const EXIT_MS = 15_000;

const used: UsedBackend[] = [];
for (const kind of ['redis', 'postgres'] as const) used.push(await useBackend(kind));

describe.skipIf(!TmuxPane.available).each(used.filter((backend) => backend.url))('holdfast watch in tmux ($label)', (backend) => {
  const url = backend.url!;
  let locks: LockProvider;
  beforeAll(async () => {
    locks = await createLockProvider(url);
  });
  afterAll(() => locks?.close());

  const startWatch = (prefix: string, interval: string): Promise<TmuxPane> =>
    TmuxPane.start([
      'sh',
      '-c',
      // The shell outlives the watch (Ctrl-C reaches both: `trap : INT` keeps the shell), so the
      // terminal can be inspected after it exits: a dead tmux pane always reports its cursor hidden.
      'trap : INT; echo before-watch; "$0" "$@"; echo "watch exited $?"; exec sleep 600',
      process.execPath,
      BIN,
      'watch',
      '--backend',
      url,
      '--interval',
      interval,
      prefix,
    ]);

  async function shows(pane: TmuxPane, what: string, check: (screen: string) => boolean, withinMs = VIEW_MS): Promise<number> {
    let screen = '';
    return until(
      async () => check((screen = await pane.capture())),
      withinMs,
      () => `${what}; the pane shows:\n${screen}`,
      {
        everyMs: 100,
      },
    );
  }

  async function endedCleanly(pane: TmuxPane): Promise<void> {
    const screen = await shows(pane, 'holdfast watch exits', (text) => /watch exited \d+/.test(text), EXIT_MS).then(() => pane.capture());
    expect(screen.split('\n').filter((line) => line !== '')).toEqual(['before-watch', 'watch exited 0']);
    expect(await pane.state()).toMatchObject({ alternate_on: '0', cursor_flag: '1' });
  }

  test('locks taken by another process appear with holder, token, reason and a lease bar, and go when released; Ctrl-C restores the screen', {
    timeout: 4 * VIEW_MS + EXIT_MS,
  }, async () => {
    const prefix = `watch-test/${randomBytes(4).toString('hex')}/`;
    const pane = await startWatch(prefix, '500ms');
    try {
      await shows(pane, 'the empty view', (screen) => screen.includes('(no locks held)'));
      expect((await pane.state())['alternate_on']).toBe('1');
      const a = (await locks.tryAcquire(`${prefix}a`, { reason: 'nightly report', ttlMs: TTL_MS }))!;
      const b = (await locks.tryAcquire(`${prefix}b`, { ttlMs: TTL_MS }))!;
      const row = (key: string, token: bigint, reason: string) =>
        new RegExp(`^${key}\\s+${locks.owner}\\s+${token}\\s+${reason}\\s+\\[\u2588+\u2591*\\] \\d+\\.\\ds$`, 'm');
      await shows(
        pane,
        'both locks',
        (screen) => row(`${prefix}a`, a.token, 'nightly report').test(screen) && row(`${prefix}b`, b.token, '-').test(screen),
      );
      expect(await pane.capture()).toMatch(/2 held/);
      await a.release();
      await shows(pane, 'a gone, b still there', (screen) => !screen.includes(`${prefix}a`) && screen.includes(`${prefix}b`));
      await b.release();
      await shows(pane, 'no lock left', (screen) => screen.includes('(no locks held)'));
      await pane.sendKeys('C-c');
      await endedCleanly(pane);
    } finally {
      await pane.close();
    }
  });

  test('a release shows at once through the backend wake-up, long before the interval; SIGTERM ends it cleanly', {
    timeout: 2 * VIEW_MS + WAKE_MS + EXIT_MS,
  }, async () => {
    const prefix = `watch-test/${randomBytes(4).toString('hex')}/`;
    const held = (await locks.tryAcquire(`${prefix}c`, { reason: 'wake-up', ttlMs: TTL_MS }))!;
    const pane = await startWatch(prefix, '10m');
    try {
      await shows(pane, 'the held lock', (screen) => screen.includes(`${prefix}c`) && screen.includes('wake-up'));
      await held.release();
      const tookMs = await shows(pane, 'the release', (screen) => screen.includes('(no locks held)'), WAKE_MS);
      expect(tookMs).toBeLessThan(WAKE_MS);
      process.kill(await pane.childPid(), 'SIGTERM');
      await endedCleanly(pane);
    } finally {
      await pane.close();
    }
  });
});
