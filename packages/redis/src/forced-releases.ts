import { WaitList, type WaitListOptions } from '@holdfast/core/backend';

/** What a forced release of a semaphore key publishes: this prefix, then the freed lockIds, space-separated. */
const SLOTS_FORCED = 'force-released ';

/** The lockIds a release message says were forcibly freed, or undefined (a plain release, a plain lock's forced release). */
export function forcedSlotsIn(message: string): readonly string[] | undefined {
  return message.startsWith(SLOTS_FORCED) ? message.slice(SLOTS_FORCED.length).split(' ') : undefined;
}

/**
 * The provider's slot holders, per key, waiting to hear of a forced release of their key: each
 * message names the lockIds it freed, and every holder of the key checks whether it was one of
 * them. A message sent while the subscription was down is missed; the holder's next renewal
 * finds its slot gone instead.
 */
export class ForcedReleases {
  private readonly holders = new WaitList<string, readonly string[] | 'closed'>();
  private closed = false;

  /** The lockIds freed by a forced release of `key`; undefined after the timeout or abort; 'closed' once the provider closes. */
  wait(key: string, options: WaitListOptions): Promise<readonly string[] | 'closed' | undefined> {
    if (this.closed) return Promise.resolve('closed');
    return this.holders.wait(key, options);
  }

  told(key: string, lockIds: readonly string[]): void {
    this.holders.wakeAll(key, lockIds);
  }

  close(): void {
    this.closed = true;
    this.holders.wakeEveryone('closed');
  }
}
