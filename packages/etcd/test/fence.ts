/**
 * A fenced store in miniature, as a storage service would check writes: a write is accepted only
 * with a token at least as high as every token it has seen for the key. Two holders whose writes
 * are both accepted after a newer grant wrote would be a double grant.
 */
export class Fence {
  private readonly highest = new Map<string, bigint>();
  accepted = 0;
  rejected = 0;

  write(key: string, token: bigint): boolean {
    const seen = this.highest.get(key) ?? 0n;
    if (token < seen) {
      this.rejected++;
      return false;
    }
    this.highest.set(key, token);
    this.accepted++;
    return true;
  }
}

/** When a promise was fulfilled (performance.now()), to order it against a signal's abort; a rejection lets nothing go. */
export function fulfilledAt<T>(promise: Promise<T>): () => number | undefined {
  let at: number | undefined;
  promise.then(
    () => (at = performance.now()),
    () => undefined,
  );
  return () => at;
}
