import { LuaScript } from './lua-script.js';
import { FENCE_BUMP, SERVER_NOW } from './scripts.js';

// A read-write lock lives at its lock key as a hash: per holder 'e:<lockId>' (its lease end on the
// server's clock, ms) and 'r:<lockId>' (its record, JSON: owner, reason, at, token, mode), and 'w'
// (the writer's lockId) while a writer holds it. The key expires with the last lease, and every
// script first drops the lapsed holders, so a grant is free at its lease end whether or not anybody
// renewed, released or looked. Its waiters line up in a companion sorted set (KEYS[3], by arrival)
// with each place's mode and expiry beside it (KEYS[4]): a reader never passes a waiting writer.
// A plain lock's SET NX finds the key taken (busy: it waits), a semaphore's script finds no sorted
// set (a conflict), and FORCE_RELEASE deletes the hash: its holders learn it at their next renewal.

/** Lua helpers: `live(now)` prunes lapsed holders and returns count, writer, earliest and latest lease end. */
const HOLDERS = `${SERVER_NOW}
local function live(now)
  if redis.call('type', KEYS[1]).ok ~= 'hash' then return 0, nil, nil, nil end
  local all = redis.call('hgetall', KEYS[1])
  local count, first, last = 0, nil, nil
  local writer = nil
  for i = 1, #all, 2 do
    if all[i] == 'w' then writer = all[i + 1] end
  end
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'e:' then
      local id, ends = string.sub(all[i], 3), tonumber(all[i + 1])
      if ends <= now then
        redis.call('hdel', KEYS[1], all[i], 'r:' .. id)
        if writer == id then
          redis.call('hdel', KEYS[1], 'w')
          writer = nil
        end
      else
        count = count + 1
        if not first or ends < first then first = ends end
        if not last or ends > last then last = ends end
      end
    end
  end
  if count == 0 then redis.call('del', KEYS[1]) end
  return count, writer, first, last
end
`;

/** Lua helpers on the line (KEYS[3] arrivals, KEYS[4] "mode expiryMs" per place). */
const LINE = `
local function lineNow(now)
  local places = redis.call('zrange', KEYS[3], 0, -1)
  local line = {}
  for _, id in ipairs(places) do
    local info = redis.call('hget', KEYS[4], id)
    local mode, ends = nil, 0
    if info then mode, ends = string.match(info, '^(%a+) (%d+)$') end
    if not mode or tonumber(ends) <= now then
      redis.call('zrem', KEYS[3], id)
      redis.call('hdel', KEYS[4], id)
    else
      line[#line + 1] = {id, mode}
    end
  end
  return line
end
-- A place goes when nobody ahead of it must go first; a caller without a place (or not yet in line) counts as last.
local function turnOf(line, place, mode)
  for _, entry in ipairs(line) do
    if entry[1] == place then return true end
    if mode == 'exclusive' or entry[2] == 'exclusive' then return false end
  end
  return true
end
`;

/**
 * One attempt. KEYS: lock key, fence hash (shared with plain locks and slots, so tokens increase
 * across all), line, line info. ARGV: lockId, ttlMs, mode, owner, reason, hasReason, placeId ('' for
 * a single attempt), placeTtlMs, counterOnly ("1" on a quorum's nodes, FENCE_BUMP). Returns {1, token, acquiredAtMs}; {0, ms until the earliest lease
 * ends (-1: none)} when busy (a place joins or refreshes the line); {-1} when the key is not a
 * read-write lock (a plain lock, a semaphore, other data).
 */
export const TAKE_MODE = new LuaScript(`${FENCE_BUMP}${HOLDERS}${LINE}
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then return {-1} end
local now = nowMs()
local count, writer, first, last = live(now)
local mode, place = ARGV[3], ARGV[7]
local fits = count == 0 or (mode == 'shared' and not writer)
if not fits or not turnOf(lineNow(now), place, mode) then
  if place ~= '' then
    if not redis.call('zscore', KEYS[3], place) then
      redis.call('zadd', KEYS[3], redis.call('hincrby', KEYS[4], '#', 1), place)
    end
    redis.call('hset', KEYS[4], place, mode .. ' ' .. string.format('%.0f', now + tonumber(ARGV[8])))
    redis.call('pexpire', KEYS[3], ARGV[8])
    redis.call('pexpire', KEYS[4], ARGV[8])
  end
  if first then return {0, first - now} end
  return {0, -1}
end
if place ~= '' then
  redis.call('zrem', KEYS[3], place)
  redis.call('hdel', KEYS[4], place)
end
local token = bump(KEYS[2], nil, nil, ARGV[9] == '1')
local at = string.format('%.0f', now)
local holder = {owner = ARGV[4], at = at, token = token, mode = mode}
if ARGV[6] == '1' then holder.reason = ARGV[5] end
local ends = now + tonumber(ARGV[2])
redis.call('hset', KEYS[1], 'e:' .. ARGV[1], string.format('%.0f', ends), 'r:' .. ARGV[1], cjson.encode(holder))
if mode == 'exclusive' then redis.call('hset', KEYS[1], 'w', ARGV[1]) end
if not last or ends > last then last = ends end
redis.call('pexpireat', KEYS[1], string.format('%.0f', last))
return {1, token, at}
`);

/** KEYS: lock key. ARGV: lockId, ttlMs. 1 when lockId's lease now ends ttlMs from now, 0 when it holds nothing. */
export const EXTEND_MODE = new LuaScript(`${HOLDERS}
local now = nowMs()
local count, writer, first, last = live(now)
if count == 0 or not redis.call('hget', KEYS[1], 'e:' .. ARGV[1]) then return 0 end
local ends = now + tonumber(ARGV[2])
redis.call('hset', KEYS[1], 'e:' .. ARGV[1], string.format('%.0f', ends))
if ends > last then redis.call('pexpireat', KEYS[1], string.format('%.0f', ends)) end
return 1
`);

/** KEYS: lock key, line, line info. ARGV: lockId, channel. Frees lockId's grant and wakes the waiters; 1 if it held one. */
export const RELEASE_MODE = new LuaScript(`${HOLDERS}
local count = live(nowMs())
if count == 0 or redis.call('hdel', KEYS[1], 'e:' .. ARGV[1], 'r:' .. ARGV[1]) == 0 then return 0 end
if redis.call('hget', KEYS[1], 'w') == ARGV[1] then redis.call('hdel', KEYS[1], 'w') end
if count == 1 then redis.call('del', KEYS[1]) end
redis.call('publish', ARGV[2], 'released')
return 1
`);

/** KEYS: lock key. ARGV: lockId. 1 when lockId holds an unexpired grant. Writes nothing. */
export const MODE_HELD = new LuaScript(`${SERVER_NOW}
if redis.call('type', KEYS[1]).ok ~= 'hash' then return 0 end
local ends = redis.call('hget', KEYS[1], 'e:' .. ARGV[1])
if ends and tonumber(ends) > nowMs() then return 1 end
return 0
`);

/** KEYS: lock key, line, line info. ARGV: placeId, channel. The place leaves the line; the waiters behind it are woken. */
export const LEAVE_MODE_LINE = new LuaScript(`
if redis.call('zrem', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('hdel', KEYS[3], ARGV[1])
redis.call('publish', ARGV[2], 'released')
return 1
`);

/** KEYS: lock key. Writes nothing. {} when no read-write lock, else {serverNowMs, then per live holder: lockId, leaseEndMs, record JSON}. */
export const MODE_HOLDERS = new LuaScript(`${SERVER_NOW}
if redis.call('type', KEYS[1]).ok ~= 'hash' then return {} end
local now = nowMs()
local all = redis.call('hgetall', KEYS[1])
local reply = {string.format('%.0f', now)}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'e:' and tonumber(all[i + 1]) > now then
    local id = string.sub(all[i], 3)
    reply[#reply + 1] = id
    reply[#reply + 1] = all[i + 1]
    reply[#reply + 1] = redis.call('hget', KEYS[1], 'r:' .. id) or ''
  end
end
return reply
`);
