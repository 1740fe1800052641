import { LuaScript } from './lua-script.js';
import { FENCE_BUMP, QUEUE_HEAD, SERVER_NOW, TELL_NEXT } from './scripts.js';

// A plain lock's waiters queue on the server, so that a release lets one waiter try, across
// providers (ZooKeeper's idea: only the next waiter acts). The queue is a sorted set of waiter ids
// by arrival (KEYS[3]) and a hash of each entry's expiry on the server's clock (KEYS[4]); a waiter
// refreshes its entry while it waits, so the entry of a dead or paused waiter lapses.

/**
 * Grant in turn: SET NX PX and the fencing counter bumped in the same script (tokens strictly
 * increase per key), but a free key is refused while a live waiter other than the requester heads
 * its queue. The value set is the lockId and the holder record (holder-record.ts), so the grant
 * writes one key and bumps one counter: no holder hash, no clock read (the record's time is the
 * client's). ARGV[4] is the requester's waiter id ('' or absent for a plain attempt, which costs one
 * EXISTS while nobody waits; a plain attempt sends no ARGV[4..6]). A waiter's attempt on a key nobody queues
 * for is a plain attempt that joins the queue, at its head, only if the key is taken: so a waiting
 * acquire needs no plain attempt of its own first. Otherwise its entry is added at the tail if
 * missing (the server forgot it) and its expiry set to now + ARGV[5] ms; ARGV[6]
 * is the queue keys' own expiry (the longest an entry lives), so a deserted queue disappears.
 * KEYS: lock, fence hash, queue, entry expiries[, legacy fence (FENCE_BUMP)]. ARGV: lockId, ttlMs,
 * value, waiterId, entryTtlMs, queueTtlMs, barging ('1': a free key is granted even out of turn).
 * Returns {1, token} when granted (the waiter's entry removed); busy: {0, pttl, atHead}
 * (pttl -2 when the key is free but another waiter's turn, atHead 1 when the requester is next);
 * {-1} when the key is a semaphore's.
 */
export const ACQUIRE_IN_TURN = new LuaScript(`${FENCE_BUMP}
local waiter = ARGV[4] or ''
local queued = redis.call('exists', KEYS[3]) == 1
if waiter == '' and not queued then
  -- A plain attempt while nobody queues (nearly always): the general path below would do the same
  -- commands (mayTake is true, atHead 0), without defining the queue's functions (a closure each per run).
  if not redis.call('set', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
    if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
    return {0, redis.call('pttl', KEYS[1]), 0}
  end
  return {1, bump(KEYS[2], nil, KEYS[5])}
end
${SERVER_NOW}${QUEUE_HEAD}
local function enter()
  if not redis.call('zscore', KEYS[3], waiter) then
    redis.call('zadd', KEYS[3], redis.call('hincrby', KEYS[2], 'arrivals', 1), waiter)
  end
  redis.call('hset', KEYS[4], waiter, string.format('%.0f', nowMs() + tonumber(ARGV[5])))
  redis.call('pexpire', KEYS[3], ARGV[6])
  redis.call('pexpire', KEYS[4], ARGV[6])
end
-- Barging (ARGV[7] '1'): waiters still queue, so that a release tells one of them, but a free key
-- goes to whoever asks first.
local barging = ARGV[7] == '1'
local mayTake = true
if waiter == '' then
  mayTake = barging or not queued or not liveHead(KEYS[3], KEYS[4])
elseif queued then
  if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
  enter()
  mayTake = barging or liveHead(KEYS[3], KEYS[4]) == waiter
end
if not mayTake then return {0, redis.call('pttl', KEYS[1]), 0} end
if not redis.call('set', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2]) then
  if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
  local atHead = 0
  if waiter ~= '' then
    -- Nobody queued: the requester is the first in line.
    if not queued then enter() end
    atHead = 1
  end
  return {0, redis.call('pttl', KEYS[1]), atHead}
end
if waiter ~= '' and queued then
  redis.call('zrem', KEYS[3], waiter)
  redis.call('hdel', KEYS[4], waiter)
end
return {1, bump(KEYS[2], nil, KEYS[5])}`);

/**
 * A waiter leaves the queue (deadline, abort, failure). If it was next and the key is free, the
 * new head is told on the release channel and its provider's wake channel. KEYS: queue, entry expiries, lock. ARGV: waiterId,
 * channel. Returns 1 if the entry was there.
 */
export const LEAVE_QUEUE = new LuaScript(`${SERVER_NOW}${QUEUE_HEAD}${TELL_NEXT}
local head = redis.call('zrange', KEYS[1], 0, 0)[1]
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('hdel', KEYS[2], ARGV[1])
if head == ARGV[1] and redis.call('exists', KEYS[3]) == 0 then
  local next = liveHead(KEYS[1], KEYS[2])
  if next then
    redis.call('publish', ARGV[2], 'released ' .. next)
    tellNext(next)
  end
end
return 1
`);
