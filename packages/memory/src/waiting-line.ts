import { WaitList, type WaitOptions } from '@holdfast/core/backend';

/**
 * The places waiting for each key's plain lock, in arrival order: only the first may take a free
 * key, so a release hands the key to the longest waiter whoever else tries. A place joins with its
 * first busy attempt and leaves with its grant or when core ends its wait (leaveQueue).
 */
export class WaitingLine {
  private readonly lines = new Map<string, Set<string>>();
  /** Places told that their turn may have come, woken one at a time. */
  private readonly turns = new WaitList<string>();

  join(key: string, placeId: string): void {
    let line = this.lines.get(key);
    if (!line) this.lines.set(key, (line = new Set()));
    line.add(placeId);
  }

  /** The place gets the key (granted) or gives up; if it was first, the next one's turn may have come. */
  leave(key: string, placeId: string, keyIsFree: boolean): void {
    const line = this.lines.get(key);
    if (!line?.delete(placeId)) return;
    if (line.size === 0) this.lines.delete(key);
    else if (keyIsFree) this.callFirst(key);
  }

  /** Whether `placeId` (undefined: a caller without a place) may take the free key now. */
  mayTake(key: string, placeId: string | undefined): boolean {
    const first = this.first(key);
    return first === undefined || first === placeId;
  }

  /** The key was freed: its first place is told to try. */
  callFirst(key: string): void {
    const first = this.first(key);
    if (first !== undefined) this.turns.wakeAll(first, undefined);
  }

  /** Until the place is called (at once if its turn already came), or the wait's bounds. */
  async waitForTurn(key: string, placeId: string, keyIsFree: boolean, options: WaitOptions): Promise<void> {
    if (keyIsFree && this.first(key) === placeId) return;
    await this.turns.wait(placeId, options);
  }

  has(key: string, placeId: string): boolean {
    return this.lines.get(key)?.has(placeId) ?? false;
  }

  size(key: string): number {
    return this.lines.get(key)?.size ?? 0;
  }

  /** How many places wait for their turn now, on every key. */
  waitingNow(): number {
    return this.turns.size();
  }

  private first(key: string): string | undefined {
    return this.lines.get(key)?.values().next().value;
  }
}
