import { chmodSync, existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian's libfaketime (package `faketime`); the MT build is safe in threaded servers (MariaDB, Node). */
const LIBRARIES = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1',
  '/usr/lib/faketime/libfaketimeMT.so.1',
];

export function faketimeLibrary(): string | null {
  return LIBRARIES.find((path) => existsSync(path)) ?? null;
}

export interface FakeClockOptions {
  /**
   * Also fake CLOCK_MONOTONIC. Off by default: a real clock step (NTP, an operator) moves only the
   * wall clock, and a server's timeouts run on the monotonic one.
   */
  monotonic?: boolean;
}

/**
 * A wall clock under the test's control for the processes started with env(): libfaketime preloaded,
 * reading its offset and rate from a file that jump() and rate() rewrite during the run. Every clock
 * call re-reads the file (FAKETIME_NO_CACHE): with a cache, each process of a server (PostgreSQL's
 * backends) switched at its own moment within the cache period, and two backends a jump apart judged
 * one lease differently, a double grant no real clock step can cause.
 */
export class FakeClock {
  private offsetSeconds = 0;
  private speed = 1;
  private readonly dir: string;
  readonly file: string;

  constructor(private readonly options: FakeClockOptions = {}) {
    if (!faketimeLibrary()) throw new Error('nemesis: libfaketime not found; install it (Debian: apt-get install faketime)');
    this.dir = mkdtempSync(join(tmpdir(), 'holdfast-clock-'));
    // Servers that drop root (PostgreSQL, MariaDB) must still read the file: a process that cannot
    // read it silently runs on the real clock.
    chmodSync(this.dir, 0o755);
    this.file = join(this.dir, 'faketime');
    this.write();
  }

  /** The environment that puts a process under this clock (add it to the process's env). */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: faketimeLibrary()!,
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: this.options.monotonic ? '0' : '1',
    };
  }

  /** How far the faked wall clock is from the real one, in ms (at rate 1). */
  get offsetMs(): number {
    return this.offsetSeconds * 1000;
  }

  /** Steps the clock by `ms` (negative: back). Cumulative. */
  jump(ms: number): void {
    this.offsetSeconds += ms / 1000;
    this.write();
  }

  /**
   * Runs the clock `factor` times as fast as the real one (0.5: half speed). libfaketime scales the
   * time elapsed since the process started, so changing the rate mid-run also steps the clock.
   */
  rate(factor: number): void {
    if (!(factor > 0)) throw new RangeError('a clock rate must be above 0');
    this.speed = factor;
    this.write();
  }

  /** Back to the real time, at the real rate. */
  reset(): void {
    this.offsetSeconds = 0;
    this.speed = 1;
    this.write();
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private write(): void {
    const sign = this.offsetSeconds < 0 ? '-' : '+';
    const offset = `${sign}${Math.abs(this.offsetSeconds).toFixed(3)}`;
    // Written aside and renamed over: a reader never sees a half-written (empty) file.
    const next = `${this.file}.next`;
    writeFileSync(next, this.speed === 1 ? `${offset}\n` : `${offset} x${this.speed}\n`, { mode: 0o644 });
    renameSync(next, this.file);
  }
}
