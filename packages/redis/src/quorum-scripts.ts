import { LuaScript } from './lua-script.js';
import { FENCE_BUMP, WRITE_HOLDER } from './scripts.js';

/**
 * Quorum only: brings a node's fencing counter up to `floor` (at least the grant's token), so that
 * the next majority, which shares a node with the one that decided this grant, counts past the
 * token; and makes the node's holder record show the grant's token when the record is this grant's,
 * so that inspect() reports the token the holder has.
 * Sent as EVAL (token-sync.ts), never EVALSHA: a NOSCRIPT retry would run behind what the holder sent since.
 * KEYS: fence hash, holder hash. ARGV: floor, token, lockId.
 */
export const SYNC_TOKEN = new LuaScript(`
if tonumber(redis.call('hget', KEYS[1], 'fence') or '0') < tonumber(ARGV[1]) then
  redis.call('hset', KEYS[1], 'fence', ARGV[1])
end
if redis.call('hget', KEYS[2], 'id') == ARGV[3] then redis.call('hset', KEYS[2], 'token', ARGV[2]) end
return 1
`);

/**
 * Quorum grant: SET NX PX, and the node's fencing counter bumped in the same script. The holder
 * record's time is the client's (the moment the request was sent, as the handle's acquiredAt: the
 * nodes' clocks differ), so the script reads no clock but for a counter's first use.
 * KEYS: lock, fence hash, holder hash[, legacy fence (FENCE_BUMP)]. ARGV: lockId, ttlMs, owner, reason, hasReason ("1"/"0"), acquiredAtMs.
 * The counter is bumped without the clock floor (FENCE_BUMP's counterOnly): a quorum keeps its nodes' counters level.
 * Returns {1, token} when granted; {-1} when the key is a semaphore's; when busy {0, pttl, counter}
 * (the holder's remaining lease, -1 for a key without expiry: the wait's hint, so waiting costs no
 * PTTL of its own). A node that refused still moves its counter past the holder's token, so the
 * informational token of the next grant exceeds this holder's even if this node is not among the
 * next majority.
 */
export const QUORUM_ACQUIRE = new LuaScript(`${FENCE_BUMP}${WRITE_HOLDER}
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if redis.call('type', KEYS[1]).ok == 'zset' then return {-1} end
  return {0, redis.call('pttl', KEYS[1]), bump(KEYS[2], nil, KEYS[4], true)}
end
local token = bump(KEYS[2], nil, KEYS[4], true)
writeHolder(ARGV[6], token)
return {1, token}
`);

/**
 * SYNC_TOKEN for a semaphore slot or a read-write grant on a quorum: the node's fencing counter
 * raised to `floor`, and the grant's JSON record (a field of the slots hash, or 'r:<lockId>' of the
 * read-write hash) set to show `token`, so that holders() reports the token the holder has.
 * KEYS: fence hash, record hash. ARGV: floor, token, record field.
 */
export const SYNC_SHARE_TOKEN = new LuaScript(`
if tonumber(redis.call('hget', KEYS[1], 'fence') or '0') < tonumber(ARGV[1]) then
  redis.call('hset', KEYS[1], 'fence', ARGV[1])
end
if redis.call('type', KEYS[2]).ok ~= 'hash' then return 0 end
local record = redis.call('hget', KEYS[2], ARGV[3])
if not record then return 0 end
local decoded = cjson.decode(record)
decoded.token = ARGV[2]
redis.call('hset', KEYS[2], ARGV[3], cjson.encode(decoded))
return 1
`);
