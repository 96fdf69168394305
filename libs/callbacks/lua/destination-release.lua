--[[
  Gives back an attempt's slot, learns from its outcome (about the workspace that made it, and
  about the host), and hands the free slots to parked attempts.

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state
    KEYS[4] who holds each lease and parked attempt
    KEYS[5] each workspace's share
    KEYS[6] the workspaces' lines
    KEYS[7] the waiting workspaces by turn
            (each as includes/destination-slots describes it)

    ARGV[1] lease id
    ARGV[2] now ms
    ARGV[3] lease ms
    ARGV[4] base cap
    ARGV[5] slow lane cap
    ARGV[6] slow lane ms: how long a slow attempt puts its workspace in its slow lane, and how long a
            fast one vouches that the host is up
    ARGV[7] '1' when the attempt was slow (timed out, or answered after half the timeout)
    ARGV[8] '1' when it answered or failed fast
    ARGV[9] throttle ms: > 0 when the receiver pushed back (429, 502, 504, Retry-After)
    ARGV[10] '1' delivered, '0' failed, '' no attempt was made
    ARGV[11] the workspace whose attempt it was
    ARGV[12] ms that idle destination keys are kept

  Output:
    {limit, woken ids...}
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[2])
local lease_ms = tonumber(ARGV[3])
local max_in_flight = tonumber(ARGV[4])
local slow_max_in_flight = tonumber(ARGV[5])
local slow_lane_ms = tonumber(ARGV[6])
local ws = ARGV[11]
local keep_ms = tonumber(ARGV[12])

end_lease(ARGV[1])
drop_lapsed(now)

local learnt = false
if ARGV[7] == '1' then
  -- The workspace's own slow lane; the host's state remembers it too, for when no one answers fast.
  redis.call('HSET', KEYS[5], 's:' .. ws, now + slow_lane_ms)
  redis.call('HSET', KEYS[3], 'slow_until', now + slow_lane_ms)
  learnt = true
end
if ARGV[8] == '1' then
  redis.call('HSET', KEYS[3], 'fast_until', now + slow_lane_ms)
  learnt = true
end
if ARGV[10] == '1' then
  redis.call('HSET', KEYS[5], 'd:' .. ws, now)
  redis.call('HDEL', KEYS[5], 'r:' .. ws)
  learnt = true
elseif ARGV[10] == '0' then
  redis.call('HSET', KEYS[5], 'f:' .. ws, now)
  redis.call('HINCRBY', KEYS[5], 'r:' .. ws, 1)
  learnt = true
end
local throttle_ms = tonumber(ARGV[9])
if throttle_ms > 0 then
  -- Halved once per second at most: the attempts in flight when a receiver starts pushing back all
  -- come back with the same answer, and that is one signal, not one per attempt. The host asked:
  -- every workspace's attempts there go slower.
  local last = tonumber(redis.call('HGET', KEYS[3], 'throttle_at') or '0')
  if now - last >= 1000 then
    local halved = math.max(1, math.floor(effective_limit(now, max_in_flight, slow_max_in_flight) / 2))
    redis.call('HSET', KEYS[3], 'throttle_limit', halved, 'throttle_at', now)
  end
  local until_ms = tonumber(redis.call('HGET', KEYS[3], 'throttle_until') or '0')
  redis.call('HSET', KEYS[3], 'throttle_until', math.max(until_ms, now + throttle_ms))
  learnt = true
end
if learnt then keep_due(keep_ms) end

local limit = effective_limit(now, max_in_flight, slow_max_in_flight)
local reply = {limit}
for _, id in ipairs(wake(now, limit, slow_max_in_flight, lease_ms)) do table.insert(reply, id) end
return reply
