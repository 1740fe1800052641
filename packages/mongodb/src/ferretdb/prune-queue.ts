import { allowManyListeners, type Bound, throwIfAborted } from '../bounded.js';
import { recordId } from './records.js';
import type { VersionChain } from './version-chain.js';

interface Commit {
  readonly key: string;
  readonly version: number;
  /** Monotonic ms. */
  readonly at: number;
}

/**
 * Superseded version records waiting to be deleted: after committing version v of a key, its
 * records below v go `delayMs` later, one by one in ascending order (see VersionChain for why).
 */
export class PruneQueue {
  /** In commit order, so the due ones come first. */
  private commits: Commit[] = [];

  constructor(
    private readonly chain: VersionChain,
    private readonly delayMs: number,
  ) {}

  add(key: string, version: number): void {
    this.commits.push({ key, version, at: performance.now() });
  }

  get size(): number {
    return this.commits.length;
  }

  /** Deletes what is due; a key whose deletes failed stays queued. */
  async drain(bound: Bound): Promise<void> {
    allowManyListeners(bound);
    const cutoff = performance.now() - this.delayMs;
    const below = new Map<string, number>();
    for (const commit of this.commits) {
      if (commit.at > cutoff) break;
      below.set(commit.key, Math.max(below.get(commit.key) ?? 0, commit.version));
    }
    for (const [key, version] of below) {
      await this.prune(key, version, bound);
      this.commits = this.commits.filter((commit) => commit.key !== key || commit.at > cutoff);
    }
  }

  private async prune(key: string, below: number, bound: Bound): Promise<void> {
    // A key without a mirror is walked from version 0: its records must all stay (VersionChain, rule 1).
    if (!(await this.chain.mirrors.collection.findOne({ _id: key }, { projection: { _id: 1 }, signal: bound.signal }))) return;
    const superseded = await this.chain.records
      .find({ key, version: { $lt: below } }, { projection: { version: 1 }, sort: { version: 1 }, signal: bound.signal })
      .toArray();
    for (const { version } of superseded) {
      throwIfAborted(bound);
      await this.chain.records.deleteOne({ _id: recordId(key, version) });
    }
  }
}
