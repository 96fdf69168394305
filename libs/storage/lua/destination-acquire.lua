--[[
  Takes a slot of a destination for one attempt, or parks the attempt when the destination has
  none free. Parked attempts are served oldest due first, before any newcomer.

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state
    KEYS[4] the destinations of its shard with recent activity (sorted set: id -> last activity ms)

    ARGV[1] destination id
    ARGV[2] lease id: the id of the job making the attempt (a slot reserved for it is found under it)
    ARGV[3] now ms
    ARGV[4] lease ms: how long the slot is held at most
    ARGV[5] the attempt's due time ms: its place in the parked order
    ARGV[6] base cap
    ARGV[7] slow lane cap
    ARGV[8] origin, for people
    ARGV[9] ms that idle destination keys are kept
    ARGV[10] park as: the id of the job the attempt goes on as if parked (a slot is reserved under it
             when its turn comes), or '' for an attempt that is not to be parked
    ARGV[11] '1' to note the destination's activity (its place among its shard's recent
             destinations, its origin, and the expiry of both), '' when the caller noted it lately:
             they are read by the quarter hour and kept for a day, so every attempt need not

  Output:
    {1, limit, woken ids...}           granted (also when a lease was already held in its name:
                                        reserved for it at wake-up, or its own before a crash)
    {0, wake at ms, limit, position, woken ids...}
                                       parked; wake at = when its turn comes at the latest if every
                                        attempt ahead of it takes its whole lease (the delayed job's
                                        fallback, and the callback's next_attempt_at); not parked
                                        (ARGV[10] ''): wake at = now, position = -1
  Woken ids are parked attempts handed a slot on the way (slots had come free by lapsing), whose
  delayed jobs the caller promotes.
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local keep_ms = tonumber(ARGV[9])

-- Everything the gate keeps goes when idle for as long: nothing of it is a record of anything.
if ARGV[11] == '1' then
  redis.call('ZADD', KEYS[4], now, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - keep_ms)
  redis.call('PEXPIRE', KEYS[4], keep_ms)
  redis.call('HSET', KEYS[3], 'origin', ARGV[8])
  redis.call('PEXPIRE', KEYS[3], keep_ms)
end

drop_lapsed(now)
local limit = effective_limit(now, tonumber(ARGV[6]), tonumber(ARGV[7]))
local woken = wake(now, limit, lease_ms)

local granted = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not granted and redis.call('ZCARD', KEYS[1]) < limit then granted = true end
if granted then
  redis.call('ZADD', KEYS[1], now + lease_ms, ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[2], ARGV[10])
  local reply = {1, limit}
  for _, id in ipairs(woken) do
    if id ~= ARGV[2] then table.insert(reply, id) end
  end
  return reply
end

if ARGV[10] == '' then
  -- Parked under this id before (by a dispatcher that parked every attempt): out of the line, or a
  -- slot would be handed to a job that no longer waits for one.
  redis.call('ZREM', KEYS[2], ARGV[2])
  local reply = {0, now, limit, -1}
  for _, id in ipairs(woken) do table.insert(reply, id) end
  return reply
end

-- A job parked before and run at its fallback time keeps its place in line under its next id.
local place = redis.call('ZSCORE', KEYS[2], ARGV[2]) or ARGV[5]
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', place, ARGV[10])
redis.call('PEXPIRE', KEYS[2], keep_ms)
local position = redis.call('ZRANK', KEYS[2], ARGV[10])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local earliest = now
if first[2] then earliest = math.max(now, tonumber(first[2])) end
local reply = {0, earliest + math.floor(position / limit) * lease_ms, limit, position}
for _, id in ipairs(woken) do table.insert(reply, id) end
return reply
