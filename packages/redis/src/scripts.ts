import { LuaScript } from './lua-script.js';

// KEYS[1] is always the lock key: for a plain lock a string whose value is the holder's lockId (as in
// redlock), followed on one server by the holder record (holder-record.ts); a sorted set of lockIds
// for a semaphore (slot-scripts.ts). A quorum keeps the holder record in a holder hash that expires
// with the lock key. Either way a lock that lapses unreleased leaves nothing that looks like a
// holder; only the fence hash (the permanent token counter) outlives it.

/**
 * Lua: `bump(hash[, now[, legacy[, counterOnly]]])` raises the key's fencing counter and returns it
 * as a string: to its value + 1, or to the server's clock in microseconds (`now`, a TIME reply the
 * script already has, or read here) when that is higher, which it nearly always is. The clock floor
 * keeps tokens increasing where the counter alone cannot: a server that lost its data or reloaded an
 * AOF without its last second, and a replica promoted without the primary's last increments
 * (replication is asynchronous; `replicas: N` closes that window with WAIT, the floor closes it
 * without, as long as the new primary's clock is not behind the old one's by more than the failover
 * took). It costs TIME and a read per grant. Shared by plain locks, semaphore slots and read-write
 * grants, so tokens increase across all.
 *
 * `counterOnly` (a quorum's nodes): the counter alone, the clock only for a counter just created.
 * A quorum's tokens are informational and its nodes' counters are kept level (token-sync.ts): each
 * node's own clock would set them apart at every grant, and every grant would wait for a sync.
 *
 * `legacy` is the fence hash of versions up to 0.1 (another hash slot: never passed on a Cluster,
 * where those versions never ran). While they run beside this one (a rolling upgrade), they count
 * there: a counter found there is a floor, and it is then removed, so that an old provider's next
 * grant starts its counter again at the server's clock, above this token (the same reasoning as a
 * lost counter). Once no old provider is left, this is one HGET of a missing field per grant.
 */
export const FENCE_BUMP = `
local function bump(hash, now, legacy, counterOnly)
  local counter
  if counterOnly then
    counter = redis.call('hincrby', hash, 'fence', 1)
  else
    counter = (tonumber(redis.call('hget', hash, 'fence')) or 0) + 1
  end
  if counter == 1 or not counterOnly then
    now = now or redis.call('time')
    local clock = now[1] * 1000000 + now[2]
    if clock > counter then counter = clock end
    redis.call('hset', hash, 'fence', string.format('%.0f', counter))
  end
  if legacy then
    local old = tonumber(redis.call('hget', legacy, 'fence'))
    if old then
      if old >= counter then
        counter = old + 1
        redis.call('hset', hash, 'fence', string.format('%.0f', counter))
      end
      redis.call('hdel', legacy, 'fence')
    end
  end
  -- As a string: Redis would format a large Lua number in exponent notation.
  return string.format('%.0f', counter)
end
`;

/** Lua: `nowMs()`, the server's clock in whole milliseconds (leases are judged on it, never on a client's). */
export const SERVER_NOW = `
local function nowMs()
  local now = redis.call('time')
  return now[1] * 1000 + math.floor(now[2] / 1000)
end
`;

/**
 * Lua: `writeHolder(at, token)`, the holder hash (KEYS[3]) of a grant from ARGV (lockId, ttlMs,
 * owner, reason, hasReason), expiring with the lock key.
 *
 * The record is one HSET of every field. It replaces what DEL then HSET (and HSET reason) did: a
 * hash with none of id, owner, at, token is absent (release deletes it, a lapse expires it with the
 * lock key, the TTLs being equal), so the HSET adds all four and the hash holds exactly this
 * grant's fields. Fewer added means a record of an earlier grant outlived its lock key (the key
 * deleted by something that does not know the holder hash): then it is deleted and written again,
 * so no field of that grant (its reason) is shown as this one's. Every reader (INSPECT, SYNC_TOKEN)
 * reads the same fields either way.
 */
export const WRITE_HOLDER = `
local function writeHolder(at, token)
  local function record()
    if ARGV[5] == '1' then
      return redis.call('hset', KEYS[3], 'id', ARGV[1], 'owner', ARGV[3], 'at', at, 'token', token, 'reason', ARGV[4])
    end
    return redis.call('hset', KEYS[3], 'id', ARGV[1], 'owner', ARGV[3], 'at', at, 'token', token)
  end
  if record() < 4 then
    redis.call('del', KEYS[3])
    record()
  end
  redis.call('pexpire', KEYS[3], ARGV[2])
end
`;

/**
 * Lua: `holds(value, lockId)`, whether a lock key's value is `lockId`'s grant: the value is the
 * lockId itself (quorum, and redlock's own values never match) or, on one server, the lockId, a
 * newline and the holder record (holder-record.ts). LockIds contain no newline.
 */
export const HOLDS = `
local function holds(value, id)
  return value == id or (type(value) == 'string' and string.sub(value, 1, #id + 1) == id .. '\\n')
end
`;

/**
 * Prolongs the key (and, quorum, its holder hash KEYS[2]) if lockId holds it. Returns 1 extended, 0
 * missing, -1 held by another value or a semaphore (pcall: GET of a sorted set is an error reply, a table).
 */
export const EXTEND = new LuaScript(`${HOLDS}
local value = redis.pcall('get', KEYS[1])
if holds(value, ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
  if KEYS[2] then redis.call('pexpire', KEYS[2], ARGV[2]) end
  return 1
end
if value then return -1 end
return 0
`);

/** Quorum only: puts the key back on a node that forgot it (restarted), if the node has it free. */
export const REPAIR = new LuaScript(`
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`);

/**
 * Lua: \`liveHead(queue, expiries)\`, the first waiter of a lock's queue (queue-scripts.ts) whose entry
 * has not lapsed, or false; lapsed entries ahead of it are removed. Needs SERVER_NOW.
 */
export const QUEUE_HEAD = `
local function liveHead(queue, expiries)
  local now = nowMs()
  while true do
    local head = redis.call('zrange', queue, 0, 0)[1]
    if not head then return false end
    local expires = tonumber(redis.call('hget', expiries, head))
    if expires and expires > now then return head end
    redis.call('zrem', queue, head)
    redis.call('hdel', expiries, head)
  end
end
`;

/** A provider's own channel, this prefix then its wake id: releases that name one of its queued waiters come there. */
export const WAKE_CHANNEL_PREFIX = 'holdfast:wake:';

/**
 * Lua: \`tellNext(waiter)\` publishes "released <waiter>" to the wake channel of the waiter's provider
 * (its id is "<wake id>/<lockId>"), so that one provider hears it however many wait; ids of
 * other forms are told on the key's channel only.
 */
export const TELL_NEXT = `
local function tellNext(waiter)
  local provider = string.match(waiter, '^([^/]+)/')
  -- pcall: a server whose ACL refuses the channel must not fail the release (the waiter checks at pollIntervalMs).
  if provider then redis.pcall('publish', '${WAKE_CHANNEL_PREFIX}' .. provider, 'released ' .. waiter) end
end
`;

/**
 * One server: frees the key if lockId holds it and wakes the waiters. KEYS: lock, queue, entry
 * expiries (queue-scripts.ts). ARGV: lockId, channel. Returns 1 or 0. When a waiter is queued, the
 * message names it ("released <waiterId>"), so only that waiter tries; its provider hears it on its
 * wake channel (the key's channel is for observers).
 */
export const RELEASE = new LuaScript(`${HOLDS}
if not holds(redis.pcall('get', KEYS[1]), ARGV[1]) then return 0 end
redis.call('del', KEYS[1])
if redis.call('exists', KEYS[2]) == 0 then
  -- Nobody queued (nearly always): done before the queue's functions are defined (a closure each per run).
  redis.call('publish', ARGV[2], 'released')
  return 1
end
${SERVER_NOW}${QUEUE_HEAD}${TELL_NEXT}
local message = 'released'
local head = liveHead(KEYS[2], KEYS[3])
if head then
  message = 'released ' .. head
  tellNext(head)
end
redis.call('publish', ARGV[2], message)
return 1
`);

/** Quorum: frees the key and its holder hash (KEYS[2]) if lockId holds it, and tells the observers. ARGV: lockId, channel. Returns 1 or 0. */
export const QUORUM_RELEASE = new LuaScript(`
if redis.pcall('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1], KEYS[2])
redis.call('publish', ARGV[2], 'released')
return 1
`);

/**
 * Frees the key whoever holds it (holdfast or not): a plain lock with its holder hash (KEYS[2]), or
 * every slot of a semaphore with its slots hash (KEYS[3]). ARGV: channel. Returns 1 if it was held.
 * A semaphore's message names the freed lockIds, so that each slot holder is told at once. A plain
 * lock's next queued waiter (queue KEYS[4], entry expiries KEYS[5]) is told on its wake channel.
 */
export const FORCE_RELEASE = new LuaScript(`${SERVER_NOW}${QUEUE_HEAD}${TELL_NEXT}
if redis.call('type', KEYS[1]).ok == 'zset' then
  local live = redis.call('zrangebyscore', KEYS[1], '(' .. string.format('%.0f', nowMs()), '+inf')
  redis.call('del', KEYS[1], KEYS[3])
  if #live == 0 then return 0 end
  redis.call('publish', ARGV[1], 'force-released ' .. table.concat(live, ' '))
  return 1
end
local held = redis.call('del', KEYS[1])
redis.call('del', KEYS[2])
if held == 0 then return 0 end
redis.call('publish', ARGV[1], 'force-released')
if redis.call('exists', KEYS[4]) == 1 then
  local head = liveHead(KEYS[4], KEYS[5])
  if head then tellNext(head) end
end
return 1
`);

/**
 * KEYS: lock, holder hash (quorum), fence hash. Returns false when free or not a string (a
 * semaphore, other data), else {value, pttl, id, owner, reason, acquiredAtMs, token, fence}: the
 * holder hash's fields (false when missing: one server keeps the record in the value, see
 * holder-record.ts) and the fence counter, which is a single server's holder's token.
 */
export const INSPECT = new LuaScript(`
local value = redis.pcall('get', KEYS[1])
if type(value) ~= 'string' then return false end
local meta = redis.call('hmget', KEYS[2], 'id', 'owner', 'reason', 'at', 'token')
return {value, redis.call('pttl', KEYS[1]), meta[1], meta[2], meta[3], meta[4], meta[5], redis.call('hget', KEYS[3], 'fence')}
`);
