/**
 * What Holdfast stores as the lock key's (or a slot's contender entry's) value, for inspect() and holders(). `consul lock` treats the value as
 * opaque bytes and only checks Flags, so this stays compatible; foreign holders' values are shown raw.
 */
export interface LockValue {
  readonly holdfast: 1;
  readonly owner: string;
  readonly reason?: string;
  readonly acquiredAt: string;
  readonly lockId: string;
  /** A semaphore slot moved to a new session (extend of a lapsing slot): its token, which its rewritten contender entry no longer shows. */
  readonly token?: string;
}

export function encodeLockValue(value: Omit<LockValue, 'holdfast'>): string {
  return Buffer.from(JSON.stringify({ holdfast: 1, ...value })).toString('base64');
}

export function decodeLockValue(text: string): LockValue | null {
  try {
    const parsed = JSON.parse(text) as Partial<LockValue>;
    return parsed?.holdfast === 1 && typeof parsed.owner === 'string' && typeof parsed.lockId === 'string' ? (parsed as LockValue) : null;
  } catch {
    return null;
  }
}
