--[[
  Gives back an attempt's slot, learns from its outcome, and hands the free slots to parked
  attempts.

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state

    ARGV[1] lease id
    ARGV[2] now ms
    ARGV[3] lease ms
    ARGV[4] base cap
    ARGV[5] slow lane cap
    ARGV[6] slow lane ms: > 0 when the attempt was slow (the destination enters the slow lane that long)
    ARGV[7] throttle ms: > 0 when the receiver pushed back (429, 502, 504, Retry-After)
    ARGV[8] ms that idle destination keys are kept

  Output:
    {limit, woken ids...}
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[2])
local lease_ms = tonumber(ARGV[3])
local max_in_flight = tonumber(ARGV[4])
local slow_max_in_flight = tonumber(ARGV[5])

redis.call('ZREM', KEYS[1], ARGV[1])
drop_lapsed(now)

if tonumber(ARGV[6]) > 0 then
  redis.call('HSET', KEYS[3], 'slow_until', now + tonumber(ARGV[6]))
end
local throttle_ms = tonumber(ARGV[7])
if throttle_ms > 0 then
  -- Halved once per second at most: the attempts in flight when a receiver starts pushing back all
  -- come back with the same answer, and that is one signal, not one per attempt.
  local last = tonumber(redis.call('HGET', KEYS[3], 'throttle_at') or '0')
  if now - last >= 1000 then
    local halved = math.max(1, math.floor(effective_limit(now, max_in_flight, slow_max_in_flight) / 2))
    redis.call('HSET', KEYS[3], 'throttle_limit', halved, 'throttle_at', now)
  end
  local until_ms = tonumber(redis.call('HGET', KEYS[3], 'throttle_until') or '0')
  redis.call('HSET', KEYS[3], 'throttle_until', math.max(until_ms, now + throttle_ms))
end
if tonumber(ARGV[6]) > 0 or throttle_ms > 0 then redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[8])) end

local limit = effective_limit(now, max_in_flight, slow_max_in_flight)
local reply = {limit}
for _, id in ipairs(wake(now, limit, lease_ms)) do table.insert(reply, id) end
return reply
