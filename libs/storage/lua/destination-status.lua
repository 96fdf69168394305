--[[
  One destination as on-call and the dashboard see it.

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state

    ARGV[1] now ms
    ARGV[2] base cap
    ARGV[3] slow lane cap

  Output:
    {in flight, deferred, cap in force, origin or '', slow until ms or 0, throttled until ms or 0}
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[1])
local state = redis.call('HMGET', KEYS[3], 'origin', 'slow_until', 'throttle_until')
local function future(ms)
  if ms and tonumber(ms) > now then return tonumber(ms) end
  return 0
end
return {
  -- Lapsed leases are dropped only by the next attempt; they are not in flight any more.
  redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCARD', KEYS[2]),
  effective_limit(now, tonumber(ARGV[2]), tonumber(ARGV[3])),
  state[1] or '',
  future(state[2]),
  future(state[3]),
}
