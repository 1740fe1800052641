/**
 * The demo's protected resource: like a storage service that checks fencing tokens, it refuses a
 * write whose token is older than one it already accepted for the key, and it notices two writers
 * inside the same key at once.
 */
export class FencedStore {
  private readonly highest = new Map<string, bigint>();
  private readonly inside = new Map<string, number>();

  enter(key: string, token: bigint): string | null {
    const occupants = (this.inside.get(key) ?? 0) + 1;
    this.inside.set(key, occupants);
    if (occupants > 1) return `two holders inside "${key}" at once`;
    const highest = this.highest.get(key);
    if (highest !== undefined && token <= highest) return `stale token ${token} for "${key}" (highest accepted ${highest})`;
    this.highest.set(key, token);
    return null;
  }

  leave(key: string): void {
    this.inside.set(key, (this.inside.get(key) ?? 1) - 1);
  }
}
