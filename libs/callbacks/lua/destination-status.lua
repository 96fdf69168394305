--[[
  One destination as on-call sees it (every workspace together), and, when asked, one workspace's
  share of it as that workspace's dashboard sees it (its own attempts only).

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state
    KEYS[4] who holds each lease and parked attempt
    KEYS[5] each workspace's share
    KEYS[6] the workspaces' lines
    KEYS[7] the waiting workspaces by turn
            (each as includes/destination-slots describes it)

    ARGV[1] now ms
    ARGV[2] base cap
    ARGV[3] slow lane cap
    ARGV[4] a workspace id, or '' for the destination alone

  Output:
    {in flight, deferred, cap in force, origin or '', whole host slow until ms or 0, throttled until
     ms or 0, workspaces in their own slow lane, workspaces waiting held back by their own slowness,
     by the host's back-pressure, by the whole host's slowness, by a full host (these five 0 with
     ARGV[4]),
     then with ARGV[4]: its attempts in flight, its attempts parked, how many of its attempts may be
     in flight at once, its own slow lane's end ms or 0, its last delivered ms or 0, its last failed
     ms or 0, its failures since the last delivered one}
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[1])
local slow_max_in_flight = tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[3], 'origin', 'slow_until', 'fast_until', 'throttle_until')
local function future(ms)
  if ms and tonumber(ms) > now then return tonumber(ms) end
  return 0
end
local limit = effective_limit(now, tonumber(ARGV[2]), slow_max_in_flight)
local host_slow = 0
if future(state[3]) == 0 then host_slow = future(state[2]) end
local throttled = future(state[4])

-- The tallies over every workspace are on-call's (metrics); a workspace's dashboard reads its own
-- share, and is spared a walk over every workspace that called the host lately.
local slow_workspaces = 0
local held = {0, 0, 0, 0}
if ARGV[4] == '' then
  local shares = redis.call('HGETALL', KEYS[5])
  for i = 1, #shares, 2 do
    if string.sub(shares[i], 1, 2) == 's:' and tonumber(shares[i + 1]) > now then slow_workspaces = slow_workspaces + 1 end
  end
  for _, ws in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do
    local reason = 4
    if in_own_slow_lane(ws, now) then reason = 1
    elseif throttled > 0 then reason = 2
    elseif host_slow > 0 then reason = 3 end
    held[reason] = held[reason] + 1
  end
end

local reply = {
  -- Lapsed leases are dropped only by the next attempt; they are not in flight any more.
  redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf'),
  redis.call('ZCARD', KEYS[2]),
  limit,
  state[1] or '',
  host_slow,
  throttled,
  slow_workspaces,
  held[1], held[2], held[3], held[4],
}
if ARGV[4] ~= '' then
  local ws = ARGV[4]
  local own = redis.call('HMGET', KEYS[5], 'n:' .. ws, 'p:' .. ws, 's:' .. ws, 'd:' .. ws, 'f:' .. ws, 'r:' .. ws)
  table.insert(reply, tonumber(own[1] or '0'))
  table.insert(reply, tonumber(own[2] or '0'))
  table.insert(reply, share_limit(ws, now, limit, slow_max_in_flight))
  table.insert(reply, future(own[3]))
  table.insert(reply, tonumber(own[4] or '0'))
  table.insert(reply, tonumber(own[5] or '0'))
  table.insert(reply, tonumber(own[6] or '0'))
end
return reply
