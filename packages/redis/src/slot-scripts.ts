import { LuaScript } from './lua-script.js';
import { FENCE_BUMP, SERVER_NOW } from './scripts.js';

// A semaphore lives at its lock key: a sorted set of the holders' lockIds, each scored with the
// end of its lease on the server's clock (ms), as redis-semaphore keeps its slots, but scored by
// expiry so that every holder may have its own TTL. Beside it, the slots hash (KEYS[2]) holds the
// limit and, per lockId, the holder record (JSON: owner, reason, at, token). Both keys expire with
// the last lease; every script first prunes the lapsed members, so a slot is free at its lease end
// whether or not anybody renewed, released or looked. Any other type at the key (a plain lock, a
// redlock resource, data) makes the key unusable as a semaphore.

/** Lua helpers on KEYS[1] (the sorted set) and KEYS[2] (the slots hash). */
const SLOTS = `${SERVER_NOW}
local function kind()
  return redis.call('type', KEYS[1]).ok
end
local function prune(now)
  local lapsed = redis.call('zrangebyscore', KEYS[1], '-inf', now)
  if #lapsed == 0 then return end
  redis.call('zremrangebyscore', KEYS[1], '-inf', now)
  for _, id in ipairs(lapsed) do redis.call('hdel', KEYS[2], id) end
end
-- Both keys live until the last lease ends, and go with the last slot.
local function keepUntilLast()
  local last = redis.call('zrange', KEYS[1], -1, -1, 'WITHSCORES')
  if #last == 0 then
    redis.call('del', KEYS[2])
    return
  end
  redis.call('pexpireat', KEYS[1], last[2])
  redis.call('pexpireat', KEYS[2], last[2])
end
`;

/**
 * One attempt at a slot. KEYS: lock key, slots hash, fence hash (shared with plain locks, so tokens
 * increase across slots and locks)[, legacy fence (FENCE_BUMP)]. ARGV: lockId, ttlMs, limit, owner, reason, hasReason ("1"/"0"),
 * counterOnly ("1" on a quorum's nodes, FENCE_BUMP).
 * Returns {1, token, acquiredAtMs} when granted; {0, ms until the earliest lease ends} when every
 * slot is taken; {-1} when the key is not a semaphore (a plain lock); {-2, limit} when it is one
 * with another limit (-1: its limit record is missing, so no limit is trusted).
 */
export const TAKE_SLOT = new LuaScript(`${FENCE_BUMP}${SLOTS}
local found = kind()
if found ~= 'none' and found ~= 'zset' then return {-1} end
local now = nowMs()
prune(now)
local held = redis.call('zcard', KEYS[1])
if held > 0 then
  local limit = tonumber(redis.call('hget', KEYS[2], 'limit'))
  if limit ~= tonumber(ARGV[3]) then return {-2, limit or -1} end
  if held >= limit then
    local earliest = redis.call('zrange', KEYS[1], 0, 0, 'WITHSCORES')
    return {0, tonumber(earliest[2]) - now}
  end
else
  redis.call('del', KEYS[2])
  redis.call('hset', KEYS[2], 'limit', ARGV[3])
end
local token = bump(KEYS[3], nil, KEYS[4], ARGV[7] == '1')
local at = string.format('%.0f', now)
local holder = {owner = ARGV[4], at = at, token = token}
if ARGV[6] == '1' then holder.reason = ARGV[5] end
redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('hset', KEYS[2], ARGV[1], cjson.encode(holder))
keepUntilLast()
return {1, token, at}
`);

/** KEYS: lock key, slots hash. ARGV: lockId, ttlMs. Returns 1 when lockId's lease now ends ttlMs from now, 0 when it holds no slot. */
export const EXTEND_SLOT = new LuaScript(`${SLOTS}
if kind() ~= 'zset' then return 0 end
local now = nowMs()
prune(now)
if not redis.call('zscore', KEYS[1], ARGV[1]) then return 0 end
redis.call('zadd', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keepUntilLast()
return 1
`);

/** KEYS: lock key, slots hash. ARGV: lockId, channel. Frees lockId's slot and wakes a waiter; 1 if it held one, else 0. */
export const RELEASE_SLOT = new LuaScript(`${SLOTS}
if kind() ~= 'zset' then return 0 end
prune(nowMs())
if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('hdel', KEYS[2], ARGV[1])
keepUntilLast()
redis.call('publish', ARGV[2], 'released')
return 1
`);

/** KEYS: lock key. ARGV: lockId. 1 when lockId holds a slot whose lease has not ended, else 0. Writes nothing. */
export const SLOT_HELD = new LuaScript(`${SERVER_NOW}
if redis.call('type', KEYS[1]).ok ~= 'zset' then return 0 end
local ends = redis.call('zscore', KEYS[1], ARGV[1])
if ends and tonumber(ends) > nowMs() then return 1 end
return 0
`);

/**
 * KEYS: lock key, slots hash. Writes nothing. Returns {} when the key is no semaphore, else
 * {serverNowMs, limit, then per unexpired slot: lockId, leaseEndMs, holder JSON ('' if missing)}.
 */
export const SLOT_HOLDERS = new LuaScript(`${SLOTS}
if kind() ~= 'zset' then return {} end
local now = string.format('%.0f', nowMs())
local live = redis.call('zrangebyscore', KEYS[1], '(' .. now, '+inf', 'WITHSCORES')
local reply = {now, redis.call('hget', KEYS[2], 'limit') or ''}
for i = 1, #live, 2 do
  reply[#reply + 1] = live[i]
  reply[#reply + 1] = live[i + 1]
  reply[#reply + 1] = redis.call('hget', KEYS[2], live[i]) or ''
end
return reply
`);
