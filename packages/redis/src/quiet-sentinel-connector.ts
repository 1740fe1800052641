import { type Redis, SentinelConnector } from 'ioredis';

const ignore = (): void => undefined;

/** What SentinelConnector keeps private (ioredis 5): how it opens a connection to one Sentinel. */
interface SentinelOpener {
  connectToSentinel?: (...args: unknown[]) => Redis;
}

/**
 * ioredis's failover detector (`failoverDetector: true`) subscribes to every Sentinel on clients of
 * its own with no 'error' listener, so each failed connection to a Sentinel (one down, or cut off)
 * was printed as "[ioredis] Unhandled error event" on the app's stderr, again at every reconnection.
 * Those clients only hasten the news of a failover: the data connection's own errors still reach the
 * node, and a Sentinel that cannot be reached says nothing the caller can act on. The resolve step's
 * clients already ignore their errors in ioredis; this ignores the detector's the same way.
 */
export class QuietSentinelConnector extends SentinelConnector {
  // `unknown`, as ioredis's ConnectorConstructor passes it: the sentinel options of the client.
  constructor(options: unknown) {
    super(options as ConstructorParameters<typeof SentinelConnector>[0]);
    const self = this as unknown as SentinelOpener;
    const open = self.connectToSentinel;
    // A later ioredis that opens them another way: nothing to quiet, and nothing broken either.
    if (typeof open !== 'function') return;
    self.connectToSentinel = (...args: unknown[]): Redis => {
      const client = open.apply(this, args);
      client.on('error', ignore);
      return client;
    };
  }
}
