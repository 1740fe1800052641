import { LuaScript } from './lua-script.js';
import { FENCE_BUMP, QUEUE_HEAD, RECORD_GRANT, SERVER_NOW, TELL_NEXT } from './scripts.js';

// A plain lock's waiters queue on the server, so that a release lets one waiter try, across
// providers (ZooKeeper's idea: only the next waiter acts). The queue is a sorted set of waiter ids
// by arrival (KEYS[4]) and a hash of each entry's expiry on the server's clock (KEYS[5]); a waiter
// refreshes its entry while it waits, so the entry of a dead or paused waiter lapses.

/**
 * Grant in turn: SET NX PX and the fencing counter bumped in the same script (tokens strictly
 * increase per key), but a free key is refused while a live waiter other than the requester heads
 * its queue. ARGV[6] is the requester's waiter id ('' or absent for a plain attempt, which costs one
 * EXISTS while nobody waits; a plain attempt sends no ARGV[6..8]). A waiter's attempt on a key nobody queues
 * for is a plain attempt that joins the queue, at its head, only if the key is taken: so a waiting
 * acquire needs no plain attempt of its own first. Otherwise its entry is added at the tail if
 * missing (the server forgot it) and its expiry set to now + ARGV[7] ms; ARGV[8]
 * is the queue keys' own expiry (the longest an entry lives), so a deserted queue disappears.
 * KEYS: lock, fence hash, holder hash, queue, entry expiries. ARGV: lockId, ttlMs, owner, reason,
 * hasReason ("1"/"0"), waiterId, entryTtlMs, queueTtlMs.
 * Returns {1, token, acquiredAtMs} when granted (the waiter's entry removed); busy: {0, pttl, atHead}
 * (pttl -2 when the key is free but another waiter's turn, atHead 1 when the requester is next);
 * {-1} when the key is a semaphore's.
 */
export const ACQUIRE_IN_TURN = new LuaScript(`${FENCE_BUMP}${RECORD_GRANT}
local waiter = ARGV[6] or ''
local queued = redis.call('exists', KEYS[4]) == 1
if waiter == '' and not queued then
  -- A plain attempt while nobody queues (nearly always): the general path below would do the same
  -- commands (mayTake is true, atHead 0), without defining the queue's functions (a closure each per run).
  if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
    return {0, redis.call('pttl', KEYS[1]), 0}
  end
  return recordGrant()
end
${SERVER_NOW}${QUEUE_HEAD}
local function enter()
  if not redis.call('zscore', KEYS[4], waiter) then
    redis.call('zadd', KEYS[4], redis.call('hincrby', KEYS[2], 'arrivals', 1), waiter)
  end
  redis.call('hset', KEYS[5], waiter, string.format('%.0f', nowMs() + tonumber(ARGV[7])))
  redis.call('pexpire', KEYS[4], ARGV[8])
  redis.call('pexpire', KEYS[5], ARGV[8])
end
local mayTake = true
if waiter == '' then
  mayTake = not queued or not liveHead(KEYS[4], KEYS[5])
elseif queued then
  if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
  enter()
  mayTake = liveHead(KEYS[4], KEYS[5]) == waiter
end
if not mayTake then return {0, redis.call('pttl', KEYS[1]), 0} end
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
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
  redis.call('zrem', KEYS[4], waiter)
  redis.call('hdel', KEYS[5], waiter)
end
return recordGrant()`);

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
