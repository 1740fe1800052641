import { LockConflictError } from '@holdfast/core';
import { type Contender, type ContenderKind, isReadWriteKind, LOCK_KIND, limitOf, lineOf, READ_KIND, WRITE_KIND } from './node-names.js';
import type { ZkCalls } from './zk-calls.js';

/** What a contender's znode carries: who, why, and which attempt wrote it last (its ownership proof). */
export interface ContenderData {
  readonly owner: string;
  readonly reason?: string;
  readonly lockId: string;
}

export function encodeData(data: ContenderData): Buffer {
  return Buffer.from(JSON.stringify(data));
}

/** The data of a node this provider wrote, or undefined for anything else. */
export function decodeData(raw: Buffer | undefined): ContenderData | undefined {
  if (!raw || raw.length === 0) return undefined;
  try {
    const value = JSON.parse(raw.toString('utf8')) as Partial<ContenderData>;
    return typeof value.owner === 'string' && typeof value.lockId === 'string' ? (value as ContenderData) : undefined;
  } catch {
    return undefined;
  }
}

/** A key's contenders in line order; empty when its znode does not exist. */
export async function readLine(calls: ZkCalls, dir: string, signal: AbortSignal): Promise<Contender[]> {
  return lineOf((await calls.children(dir, signal)) ?? []);
}

/** The kind the key is used as now (its first contender's), or undefined while nobody contends. */
export function kindInUse(line: readonly Contender[]): ContenderKind | undefined {
  return line[0]?.kind;
}

/** How a kind uses its key: readers and writers share one read-write lock. */
function useOf(kind: ContenderKind): string {
  return isReadWriteKind(kind) ? 'read-write' : kind;
}

/**
 * A key is a lock, a semaphore of one limit or a read-write lock at a time: an attempt of another
 * use than the contenders already in line is refused, before anything is written.
 */
export function refuseOtherUse(key: string, line: readonly Contender[], kind: ContenderKind): void {
  const used = line.find((c) => useOf(c.kind) !== useOf(kind));
  if (!used) return;
  const as = (k: ContenderKind): string =>
    k === LOCK_KIND ? 'a lock' : isReadWriteKind(k) ? 'a read-write lock' : `a semaphore of limit ${limitOf(k)}`;
  throw new LockConflictError(key, `the key is in use as ${as(used.kind)}, not as ${as(kind)}`);
}

/**
 * The holders: the first `limit` contenders of the line; of a read-write lock (Curator's rule), the
 * first writer if it leads the line, else the readers before the first writer.
 */
export function holdersOf(line: readonly Contender[]): Contender[] {
  const kind = kindInUse(line);
  if (kind === undefined) return [];
  if (!isReadWriteKind(kind)) return line.filter((c) => c.kind === kind).slice(0, limitOf(kind));
  const contenders = line.filter((c) => isReadWriteKind(c.kind));
  if (contenders[0]?.kind === WRITE_KIND) return contenders.slice(0, 1);
  const firstWriter = contenders.findIndex((c) => c.kind !== READ_KIND);
  return firstWriter === -1 ? contenders : contenders.slice(0, firstWriter);
}

/** Whether an attempt of `kind` that joined the line now would have to wait (a single attempt is then busy at once). */
export function newcomerWaits(line: readonly Contender[], kind: ContenderKind): boolean {
  if (kind === READ_KIND) return line.some((c) => c.kind !== READ_KIND);
  return line.length >= limitOf(kind);
}
