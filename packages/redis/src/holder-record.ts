/**
 * On one server, a plain lock's value is its lockId, a newline, then the holder record as JSON
 * (`[acquiredAtMs, owner]` or `[acquiredAtMs, owner, reason]`): who holds the lock lives and expires
 * with the lock key itself, so a grant writes one key instead of a key and a holder hash (and its
 * PEXPIRE), a renewal prolongs one key, and a release deletes one. Scripts only compare the lockId
 * part (HOLDS in scripts.ts); lockIds contain no newline, so no lockId is a prefix of another's value.
 * A quorum keeps plain lockIds (the redlock package's form) and a holder hash.
 */
export interface HolderRecord {
  readonly lockId: string;
  readonly acquiredAtMs: number;
  readonly owner: string;
  readonly reason: string | undefined;
}

export function holderValue(lockId: string, acquiredAtMs: number, owner: string, reason: string | undefined): string {
  return `${lockId}\n${JSON.stringify(reason === undefined ? [acquiredAtMs, owner] : [acquiredAtMs, owner, reason])}`;
}

/** The record in a lock key's value, or undefined for a plain lockId (a quorum's) or a foreign value. */
export function holderRecordOf(value: string): HolderRecord | undefined {
  const newline = value.indexOf('\n');
  if (newline < 0) return undefined;
  try {
    const [acquiredAtMs, owner, reason] = JSON.parse(value.slice(newline + 1)) as unknown[];
    if (typeof acquiredAtMs !== 'number' || typeof owner !== 'string' || (reason !== undefined && typeof reason !== 'string'))
      return undefined;
    return { lockId: value.slice(0, newline), acquiredAtMs, owner, reason };
  } catch {
    return undefined;
  }
}

/** Whether a lock key's value (GET) is `lockId`'s grant, in either form. */
export function valueHolds(value: string | null, lockId: string): boolean {
  return value === lockId || value?.startsWith(`${lockId}\n`) === true;
}
