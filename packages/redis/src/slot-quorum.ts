/**
 * How many nodes of a quorum must hold a semaphore slot for `limit` holders at most. Each node
 * admits at most `limit` slot holders, so the nodes have `nodes * limit` slots between them; if
 * every holder needs `q` of them, `limit + 1` holders need `(limit + 1) * q`, which is more than
 * there are once `q > nodes * limit / (limit + 1)`. For a limit of 1 that is a majority (a lock);
 * for 3 nodes and a limit of 2 or more it is every node. Any two such sets share a node (q is more
 * than half), which is what keeps tokens increasing across them (token-sync.ts).
 */
export function slotQuorum(nodes: number, limit: number): number {
  return Math.floor((nodes * limit) / (limit + 1)) + 1;
}
