/** A waiter's place in the provider's line for a key: `ready` once it is its turn. */
export interface Turn {
  readonly ready: Promise<void>;
  /** Leaves the line; if it was this waiter's turn, the next waiter's begins. */
  end(): void;
}

interface InLine {
  start(): void;
}

/**
 * The provider's waiters on one key take turns, first come first: only the one whose turn it is
 * stands in Consul's queue, so N local waiters cost one queue entry and one blocking query, not N.
 * A place in line outlives any one wait for it (core waits in slices): only end() gives it up.
 */
export class LocalTurns {
  private readonly lines = new Map<string, InLine[]>();

  join(key: string): Turn {
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = []));
    let start!: () => void;
    const ready = new Promise<void>((resolve) => {
      start = resolve;
    });
    const place: InLine = { start };
    line.push(place);
    if (line.length === 1) start();
    return { ready, end: () => this.leave(key, place) };
  }

  private leave(key: string, place: InLine): void {
    const line = this.lines.get(key);
    const at = line?.indexOf(place) ?? -1;
    if (!line || at < 0) return;
    line.splice(at, 1);
    if (line.length === 0) this.lines.delete(key);
    else if (at === 0) line[0]!.start();
  }
}
