import type { Writable } from 'node:stream';

/** Where `holdfast watch` puts its frames. */
export interface WatchScreen {
  /** Unicode bars and a width to cut lines to: a terminal can take both, a pipe gets plain text. */
  readonly unicode: boolean;
  readonly width: number;
  /** Whether frames between refreshes are worth drawing (bars counting down). */
  readonly live: boolean;
  show(lines: readonly string[]): void;
  /** Gives the terminal back as it was. Idempotent. */
  restore(): void;
}

const ESC = '\x1b[';
const ENTER_ALTERNATE = `${ESC}?1049h${ESC}?25l`;
const LEAVE_ALTERNATE = `${ESC}?25h${ESC}?1049l`;

/**
 * A terminal: the alternate screen (the shell's screen comes back untouched on exit), the cursor
 * hidden, each frame drawn over the last from the top left, every line cleared to its end.
 */
export class TerminalScreen implements WatchScreen {
  readonly unicode = true;
  readonly live = true;
  private entered = false;

  constructor(private readonly out: Writable & { columns?: number }) {}

  get width(): number {
    return this.out.columns ?? 80;
  }

  show(lines: readonly string[]): void {
    const prefix = this.entered ? '' : ENTER_ALTERNATE;
    this.entered = true;
    this.out.write(`${prefix}${ESC}H${lines.map((line) => `${line}${ESC}K`).join('\r\n')}\r\n${ESC}J`);
  }

  restore(): void {
    if (!this.entered) return;
    this.entered = false;
    this.out.write(LEAVE_ALTERNATE);
  }
}

/** A pipe or a file: one plain snapshot per refresh, separated by a blank line, nothing redrawn. */
export class PlainScreen implements WatchScreen {
  readonly unicode = false;
  readonly width = Number.POSITIVE_INFINITY;
  readonly live = false;
  private shown = 0;

  constructor(private readonly out: Writable) {}

  show(lines: readonly string[]): void {
    this.out.write(`${this.shown++ > 0 ? '\n' : ''}${lines.join('\n')}\n`);
  }

  restore(): void {}
}
