import type { Redis } from 'ioredis';

/**
 * The commands one piece of work sent, per connection, so that its undo on a node goes out only
 * once they settled there. A script the server did not know (a restart, SCRIPT FLUSH) answers
 * EVALSHA with NOSCRIPT and its EVAL goes out one round trip later: an undo sent meanwhile runs
 * before it and finds nothing, then the EVAL sets the key. Every command is bounded by the command
 * timeout, so waiting for them is too.
 */
export class SentCommands {
  private readonly sent = new Map<Redis, Promise<unknown>>();

  track<T>(client: Redis, command: Promise<T>): Promise<T> {
    const before = this.sent.get(client);
    // Settled to nothing, so that a long chain (a grant's repairs) keeps no answers alive.
    this.sent.set(client, before ? Promise.allSettled([before, command]).then(() => undefined) : command);
    return command;
  }

  /** `next` once everything sent on `client` so far has settled, itself tracked. */
  after<T>(client: Redis, next: () => Promise<T>): Promise<T> {
    const before = this.sent.get(client);
    return this.track(client, before ? before.then(next, next) : next());
  }
}
