--[[
  A destination's slots, shared by the scripts that take and give them back.
  The caller names, before including this: KEYS[1] the leases (sorted set: lease id -> deadline ms),
  KEYS[2] the parked attempts (sorted set: delivery job id -> due ms, the order they are served in),
  KEYS[3] the destination's state (hash: origin, slow_until, throttle_limit, throttle_until, throttle_at).
]]

-- The cap in force at `now`: the base cap, the slow lane's while it lasts, half of what was in force
-- when the destination last pushed back while that lasts; the lowest of those that apply.
local function effective_limit(now, max_in_flight, slow_max_in_flight)
  local state = redis.call('HMGET', KEYS[3], 'slow_until', 'throttle_limit', 'throttle_until')
  local limit = max_in_flight
  if state[1] and tonumber(state[1]) > now then limit = math.min(limit, slow_max_in_flight) end
  if state[3] and tonumber(state[3]) > now then limit = math.min(limit, tonumber(state[2])) end
  return math.max(1, limit)
end

-- Frees the slots of attempts whose dispatcher never gave them back (it died mid-attempt).
local function drop_lapsed(now)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
end

-- Hands free slots to parked attempts, oldest due first: each gets a lease reserved in its name (so
-- no newcomer takes the slot while its delayed job is promoted) and leaves the parked set.
-- Returns the ids woken, for the caller to promote.
local function wake(now, limit, lease_ms)
  local free = limit - redis.call('ZCARD', KEYS[1])
  if free <= 0 then return {} end
  local ids = redis.call('ZRANGE', KEYS[2], 0, free - 1)
  for _, id in ipairs(ids) do
    redis.call('ZADD', KEYS[1], now + lease_ms, id)
    redis.call('ZREM', KEYS[2], id)
  end
  return ids
end
