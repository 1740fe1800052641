import type { LockInfo } from '@holdfast/core';

/** What one frame of `holdfast watch` shows: the last answer of the backend and how it was obtained. */
export interface WatchSnapshot {
  readonly title: string;
  readonly locks: readonly LockInfo[];
  /** When the backend answered (the frame's bars count down from there to `now`). */
  readonly listedAt: number;
  /** The last refresh's failure, shown until a refresh succeeds again. */
  readonly failure?: string;
}

export interface ViewStyle {
  /** Unicode block bars for a terminal; plain `#`/`-` for pipes and logs. */
  readonly unicode: boolean;
  /** Lines are cut to this many columns (a terminal's width); Infinity for pipes. */
  readonly width: number;
}

const BAR_CELLS = 20;

/**
 * The longest lease seen for each grant (key and token). LockInfo carries the lease's end, not its
 * length, so a bar's full width is the most remaining time this grant has shown: its TTL once the
 * holder renewed it in view, or what was left when it came into view.
 */
export class LeaseSpans {
  private readonly spans = new Map<string, { token: bigint; spanMs: number }>();

  /** Records this refresh's leases and forgets keys no longer held. */
  update(locks: readonly LockInfo[], now: number): void {
    const seen = new Set<string>();
    for (const info of locks) {
      seen.add(info.key);
      if (info.expiresAt === null) continue;
      const remaining = info.expiresAt.getTime() - now;
      const known = this.spans.get(info.key);
      const spanMs = known && known.token === info.token ? Math.max(known.spanMs, remaining) : remaining;
      this.spans.set(info.key, { token: info.token, spanMs });
    }
    for (const key of this.spans.keys()) if (!seen.has(key)) this.spans.delete(key);
  }

  spanOf(info: LockInfo): number | undefined {
    const known = this.spans.get(info.key);
    return known && known.token === info.token ? known.spanMs : undefined;
  }
}

/** The frame's lines: a title, the table of held locks (or a line saying there are none) and the status. */
export function renderWatch(snapshot: WatchSnapshot, spans: LeaseSpans, now: number, style: ViewStyle): string[] {
  const count = `${snapshot.locks.length} held`;
  const lines = [`${snapshot.title}  ${count}  ${new Date(snapshot.listedAt).toISOString()}`, ''];
  if (snapshot.locks.length === 0) lines.push('(no locks held)');
  else lines.push(...lockRows(snapshot.locks, spans, now, style));
  if (snapshot.failure) lines.push('', `backend failed: ${snapshot.failure} (showing the last answer)`);
  return lines.map((line) => cut(line, style.width));
}

function lockRows(locks: readonly LockInfo[], spans: LeaseSpans, now: number, style: ViewStyle): string[] {
  // Waiters appear only where the backend reports them (memory's `details.waiters`): never guessed.
  const withWaiters = locks.some((info) => typeof info.details?.['waiters'] === 'number');
  const header = ['KEY', 'HOLDER', 'TOKEN', 'REASON', ...(withWaiters ? ['WAITERS'] : []), 'LEASE'];
  const rows = locks.map((info) => [
    info.key,
    info.owner,
    String(info.token),
    info.reason ?? '-',
    ...(withWaiters ? [waitersOf(info)] : []),
    leaseText(info, spans.spanOf(info), now, style),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return [line(header), ...rows.map(line)];
}

function waitersOf(info: LockInfo): string {
  const waiters = info.details?.['waiters'];
  return typeof waiters === 'number' ? String(waiters) : '-';
}

/** A bar of the lease's remaining time and the time in seconds; a lock without a lease says what keeps it. */
export function leaseText(info: LockInfo, spanMs: number | undefined, now: number, style: ViewStyle): string {
  if (info.expiresAt === null) return 'no lease: kept alive by the holder (session / heartbeat)';
  const remaining = info.expiresAt.getTime() - now;
  if (remaining <= 0) return `${bar(0, style)} expired, not yet freed`;
  const fraction = spanMs && spanMs > 0 ? Math.min(1, remaining / spanMs) : 1;
  return `${bar(fraction, style)} ${(remaining / 1000).toFixed(1)}s`;
}

function bar(fraction: number, style: ViewStyle): string {
  const full = Math.round(fraction * BAR_CELLS);
  const [on, off] = style.unicode ? ['\u2588', '\u2591'] : ['#', '-'];
  return `[${on.repeat(full)}${off.repeat(BAR_CELLS - full)}]`;
}

function cut(line: string, width: number): string {
  return line.length > width ? line.slice(0, Math.max(0, width)) : line;
}
