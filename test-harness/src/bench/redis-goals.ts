import type { Goal } from './goals.js';
import { RAW } from './goals.js';
import { formatValue } from './render.js';
import type { BenchRow } from './types.js';

const HOLDFAST = 'holdfast redis';
const BARGING = 'holdfast redis barging';
const ONE_KEY = /^contention: (\d+) contenders on one key$/;
const MANY_KEYS = /^contention: (\d+) contenders on (\d+) keys$/;

/**
 * Issue 23's Redis goals on a run's rows, each met or by how much it is not: Holdfast against the
 * peers of the same cell (one server, one run). Peers are every subject but Holdfast's own and the
 * raw floor.
 */
export function evaluateRedisGoals(measured: readonly BenchRow[]): Goal[] {
  const redis = measured.filter((row) => row.module === 'redis');
  const cell = (group: string, metric: string): BenchRow[] => redis.filter((row) => row.group === group && row.metric === metric);
  const groups = [...new Set(redis.map((row) => row.group))];
  const manyKeys = groups.filter((group) => MANY_KEYS.test(group) && Number(MANY_KEYS.exec(group)![1]) > 1);
  const oneKey = groups.filter((group) => ONE_KEY.test(group)).sort((a, b) => Number(ONE_KEY.exec(b)![1]) - Number(ONE_KEY.exec(a)![1]))[0];
  return [
    uncontended(cell('uncontended acquire+release', 'ops/s')),
    ...(manyKeys.length > 0
      ? manyKeys.map((group) => manyKeysGoal(group, cell(group, 'grants/s')))
      : [missing('Redis, contenders on 1,000 keys', BEST_PEER)]),
    fifo(
      oneKey,
      oneKey ? cell(oneKey, 'grants/s') : [],
      cell('contention: 1 contender on one key', 'grants/s'),
      oneKey ? cell(oneKey, 'wait p99') : [],
      oneKey ? cell(oneKey, 'busiest share') : [],
    ),
    barging(oneKey, oneKey ? cell(oneKey, 'grants/s') : []),
    quorum(cell('quorum of 3: uncontended acquire+release', 'ops/s')),
    serverCpu(oneKey, oneKey ? cell(oneKey, 'server CPU per grant') : []),
  ];
}

const BEST_PEER = ">= the best peer's grants/s";
const text = (row: BenchRow | undefined): string => formatValue(row?.value);
const of = (list: readonly BenchRow[], subject: string): BenchRow | undefined => list.find((row) => row.subject === subject);
const peersIn = (list: readonly BenchRow[]): BenchRow[] =>
  list.filter((row) => !row.subject.startsWith('holdfast') && row.subject !== RAW.redis);
const bestOf = (list: readonly BenchRow[]): BenchRow | undefined => [...list].sort((a, b) => b.value - a.value)[0];
const missing = (measurement: string, goal: string): Goal => ({ measurement, holdfast: '-', best: '-', goal, verdict: 'not measured' });
const factor = (value: number): string => `${value.toFixed(2)}x`;

function uncontended(list: BenchRow[]): Goal {
  const name = 'Redis uncontended acquire+release, ratio to raw SET NX PX + compare-delete';
  const goal = "ratio >= the best peer's ratio";
  const [raw, holdfast, best] = [of(list, RAW.redis), of(list, HOLDFAST), bestOf(peersIn(list))];
  if (!raw || !holdfast || !best) return missing(name, goal);
  const [ours, theirs] = [holdfast.value / raw.value, best.value / raw.value];
  return {
    measurement: name,
    holdfast: `${factor(ours)} (${text(holdfast)} vs ${text(raw)} ops/s): ${factor(ours / theirs)} of the best peer's ratio`,
    best: `${best.subject} ${factor(theirs)}`,
    goal,
    verdict: ours >= theirs ? 'met' : 'not met',
  };
}

function manyKeysGoal(group: string, list: BenchRow[]): Goal {
  const name = `Redis, ${group.replace('contention: ', '')}, grants/s`;
  const [holdfast, best] = [of(list, HOLDFAST), bestOf(peersIn(list))];
  if (!holdfast || !best) return missing(name, BEST_PEER);
  return {
    measurement: name,
    holdfast: `${text(holdfast)} (${factor(holdfast.value / best.value)} of the best peer)`,
    best: `${best.subject} ${text(best)}`,
    goal: BEST_PEER,
    verdict: holdfast.value >= best.value ? 'met' : 'not met',
  };
}

/** FIFO (the default) on one key: >= 70 % of one contender's rate, and a wait p99 at least 5x better than every peer's. */
function fifo(group: string | undefined, rates: BenchRow[], single: BenchRow[], p99s: BenchRow[], shares: BenchRow[]): Goal {
  const goal = "FIFO: >= 70 % of the 1-contender rate, and wait p99 at least 5x better than every peer's";
  const name = `Redis, ${group?.replace('contention: ', '') ?? 'contenders on one key'}, FIFO`;
  const [many, one, p99] = [of(rates, HOLDFAST), of(single, HOLDFAST), of(p99s, HOLDFAST)];
  const peers = peersIn(p99s);
  if (!many || !one || !p99 || peers.length === 0) return missing(name, goal);
  const better = peers.map((peer) => ({ peer, by: peer.value / p99.value, share: of(shares, peer.subject) }));
  const share = many.value / one.value;
  return {
    measurement: name,
    holdfast: `${text(many)} grants/s (${factor(share)} of ${text(one)} with 1 contender), wait p99 ${text(p99)} ms`,
    best: better
      .map(
        ({ peer, by, share: busiest }) =>
          `${peer.subject} p99 ${text(peer)} ms (ours ${by >= 1 ? `${factor(by)} better` : `${factor(1 / by)} worse`}${busiest ? `; busiest contender ${text(busiest)} %` : ''})`,
      )
      .join(', '),
    goal,
    verdict: share >= 0.7 && better.every(({ by }) => by >= 5) ? 'met' : 'not met',
  };
}

function barging(group: string | undefined, rates: BenchRow[]): Goal {
  const goal = "fairness: 'barging' >= every peer's grants/s";
  const name = `Redis, ${group?.replace('contention: ', '') ?? 'contenders on one key'}, barging`;
  const [ours, best] = [of(rates, BARGING), bestOf(peersIn(rates))];
  if (!ours || !best) return missing(name, goal);
  return {
    measurement: name,
    holdfast: `${text(ours)} grants/s (${factor(ours.value / best.value)} of the best peer)`,
    best: `${best.subject} ${text(best)}`,
    goal,
    verdict: ours.value >= best.value ? 'met' : 'not met',
  };
}

function quorum(list: BenchRow[]): Goal {
  const goal = ">= redlock's rate on the same three servers";
  const name = 'Redis quorum of 3, uncontended acquire+release/s';
  const [ours, redlock] = [of(list, 'holdfast redis quorum'), list.find((row) => row.subject.startsWith('redlock'))];
  if (!ours || !redlock) return missing(name, goal);
  return {
    measurement: name,
    holdfast: `${text(ours)} (${factor(ours.value / redlock.value)} of redlock)`,
    best: `${redlock.subject} ${text(redlock)}`,
    goal,
    verdict: ours.value >= redlock.value ? 'met' : 'not met',
  };
}

/** Shown beside the peers: met once the cell has the server's CPU for Holdfast and a peer. */
function serverCpu(group: string | undefined, list: BenchRow[]): Goal {
  const goal = "the server's CPU per grant beside the peers'";
  const name = `Redis server CPU per grant, ${group?.replace('contention: ', '') ?? 'contenders on one key'}`;
  const [ours, peers] = [of(list, HOLDFAST), peersIn(list)];
  if (!ours || peers.length === 0) return missing(name, goal);
  const values = peers.map((row) => row.value);
  return {
    measurement: name,
    holdfast: `${text(ours)} us`,
    best: `peers ${formatValue(Math.min(...values))}-${formatValue(Math.max(...values))} us`,
    goal,
    verdict: 'met',
  };
}
