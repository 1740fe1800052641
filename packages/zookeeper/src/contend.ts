import { BackendError } from '@holdfast/core';
import { busy, type CallContext, type GrantOutcome, type GrantRequest, granted } from '@holdfast/core/backend';
import type { Event, Stat } from 'node-zookeeper-client';
import { ZkGrant } from './grant.js';
import { encodeData, holdersOf, newcomerWaits, readLine, refuseOtherUse } from './line.js';
import { type Contender, type ContenderKind, contenderPrefix, limitOf, READ_KIND } from './node-names.js';
import type { ZkSpace } from './space.js';
import { CreateMode, czxidOf, isNoNode } from './zk-calls.js';

/** What a busy answer tells the wait: the one node whose deletion may free a place (no herd), or the key's children. */
export interface ZkWake {
  readonly predecessor?: string;
  readonly children?: string;
}

/**
 * One attempt at a lock (kind `lock`), a slot (kind `sem<limit>`) or a read-write grant (`__READ__`,
 * `__WRIT__`), Curator's recipes: the contender is an ephemeral sequential znode under the key's
 * znode; the `limit` smallest sequences hold; a writer holds when it is the smallest, a reader when
 * no writer is before it (line.ts). The line is FIFO by sequence, so readers that come after a
 * waiting writer wait for it.
 *
 * - A single attempt (no place) never joins the line: busy at once when `limit` contenders are
 *   there; otherwise it creates its node and deletes it again unless it came within the first `limit`.
 * - A waiting acquire's node is its place in line, named by the place's id: every attempt finds it
 *   again (also one whose create answer was lost, Curator's protected mode), rewrites its data with
 *   the attempt's lockId (ownership moves to the attempt, so a late abandon of an earlier one
 *   cannot free it) and holds when the node is among the first `limit`; else it waits for its
 *   predecessor to go (a lock) or for the children to change (a semaphore).
 */
export async function contend(
  space: ZkSpace,
  request: GrantRequest,
  kind: ContenderKind,
  call: CallContext,
): Promise<GrantOutcome<ZkWake>> {
  const { signal } = call;
  const dir = space.keyPath(request.key);
  const id = request.place?.id ?? request.lockId;
  let line = await readLine(space.calls, dir, signal);
  refuseOtherUse(request.key, line, kind);
  let mine = line.find((c) => c.id === id);
  let stat: Stat | null;
  if (mine) {
    stat = await space.calls.setData(`${dir}/${mine.name}`, encodeData(dataOf(request)), -1, signal);
    if (stat === null) mine = undefined;
  }
  if (!mine) {
    if (!request.place && newcomerWaits(line, kind)) return busy(wakeFor(dir, line, undefined, kind));
    const path = await createContender(space, dir, id, kind, request, signal);
    line = await readLine(space.calls, dir, signal);
    mine = line.find((c) => `${dir}/${c.name}` === path);
    if (!mine) throw new BackendError('zookeeper', `the contender ${path} vanished at once (its session ended?)`);
    try {
      refuseOtherUse(request.key, line.slice(0, line.indexOf(mine)), kind);
    } catch (conflict) {
      await space.calls.remove(path, -1, signal);
      throw conflict;
    }
  }
  const path = `${dir}/${mine.name}`;
  const holding = holdersOf(line).includes(mine);
  if (!holding) {
    if (!request.place) {
      await space.calls.remove(path, -1, signal);
      return busy(wakeFor(dir, line, undefined, kind));
    }
    return busy(wakeFor(dir, line, mine, kind));
  }
  // One read gives the token and version and sets the holder's watch: deleted or rewritten, it is lost.
  // An event parsed with the reply, in the same chunk, fires before the grant exists: kept for it.
  let grant: ZkGrant | undefined;
  let early: Event | undefined;
  stat = await space.calls.exists(path, signal, (event) => (grant ? grant.onWatch(event) : (early = event)));
  if (stat === null) throw new BackendError('zookeeper', `the contender ${path} vanished (its session ended?)`);
  grant = new ZkGrant({
    calls: space.calls,
    session: space.session,
    path,
    version: stat.version,
    token: czxidOf(stat),
    acquiredAt: new Date(),
    autoRenew: request.autoRenew,
    ttlMs: request.ttlMs,
    onLost: request.onLost,
    afterFree: () => space.removeKeyIfIdle(dir),
  });
  if (early) grant.onWatch(early);
  return granted(grant);
}

function dataOf(request: GrantRequest): { owner: string; reason?: string; lockId: string } {
  return request.reason === undefined
    ? { owner: request.owner, lockId: request.lockId }
    : { owner: request.owner, reason: request.reason, lockId: request.lockId };
}

/** Creates the contender; the key's znode is created first when missing (or removed by an idle clean-up meanwhile). */
async function createContender(
  space: ZkSpace,
  dir: string,
  id: string,
  kind: ContenderKind,
  request: GrantRequest,
  signal: AbortSignal,
): Promise<string> {
  const path = `${dir}/${contenderPrefix(id, kind)}`;
  const data = encodeData(dataOf(request));
  for (let tries = 1; ; tries++) {
    try {
      return await space.calls.create(path, data, CreateMode.EPHEMERAL_SEQUENTIAL, signal);
    } catch (error) {
      if (!isNoNode((error as BackendError).cause) || tries >= 3) throw error;
      await space.calls.mkdirp(dir, signal);
    }
  }
}

/**
 * A lock waiter (and a read-write writer) watches only its predecessor; a reader, the last writer
 * before it (the readers between hold with it); a semaphore waiter, the key's children (any
 * holder's exit may free a slot). No herd: a release wakes the one waiter it may let in.
 */
function wakeFor(dir: string, line: readonly Contender[], mine: Contender | undefined, kind: ContenderKind): ZkWake {
  if (limitOf(kind) > 1) return { children: dir };
  const ahead = mine ? line.slice(0, line.indexOf(mine)) : line.slice(0, 1);
  const before = kind === READ_KIND ? ahead.findLast((c) => c.kind !== READ_KIND) : ahead[ahead.length - 1];
  return before ? { predecessor: `${dir}/${before.name}` } : { children: dir };
}
