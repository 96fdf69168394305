--[[
  Takes a slot of a destination for one attempt, or parks the attempt in its workspace's line when
  the workspace may take none now (includes/destination-slots says when). Free slots go to parked
  attempts first, one per waiting workspace in turn; a newcomer of a workspace that has attempts
  waiting queues behind them.

  Input:
    KEYS[1] the destination's leases
    KEYS[2] its parked attempts
    KEYS[3] its state
    KEYS[4] who holds each lease and parked attempt
    KEYS[5] each workspace's share
    KEYS[6] the workspaces' lines
    KEYS[7] the waiting workspaces by turn
            (each as includes/destination-slots describes it)
    KEYS[8] the destinations of its shard with recent activity (sorted set: id -> last activity ms)

    ARGV[1] destination id
    ARGV[2] lease id: the id of the job making the attempt (a slot reserved for it is found under it)
    ARGV[3] now ms
    ARGV[4] lease ms: how long the slot is held at most
    ARGV[5] the attempt's due time ms: its place in its workspace's line
    ARGV[6] base cap
    ARGV[7] slow lane cap
    ARGV[8] origin, for people
    ARGV[9] ms that idle destination keys are kept
    ARGV[10] park as: the id of the job the attempt goes on as if parked (a slot is reserved under it
             when its turn comes), or '' for an attempt that is not to be parked
    ARGV[11] '1' to note the destination's activity (its place among its shard's recent
             destinations, its origin, and the expiry of its keys), '' when the caller noted it
             lately: they are read by the quarter hour and kept for a day, so every attempt need not
    ARGV[12] the workspace whose attempt it is

  Output:
    {1, limit, woken ids...}           granted (also when a lease was already held in its name:
                                        reserved for it at wake-up, or its own before a crash)
    {0, wake at ms, limit, position, woken ids...}
                                       parked; limit = how many of the workspace's attempts may be
                                        in flight at once now; position = its place in its
                                        workspace's line; wake at = when its turn comes at the latest
                                        if every attempt ahead of it takes its whole lease (the
                                        delayed job's fallback, and the callback's next_attempt_at);
                                        not parked (ARGV[10] ''): wake at = now, position = -1
  Woken ids are parked attempts handed a slot on the way (slots had come free by lapsing), whose
  delayed jobs the caller promotes.
]]
--- @include "includes/destination-slots"

local now = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local max_in_flight = tonumber(ARGV[6])
local slow_max_in_flight = tonumber(ARGV[7])
local keep_ms = tonumber(ARGV[9])
local ws = ARGV[12]

if ARGV[11] == '1' then
  redis.call('ZADD', KEYS[8], now, ARGV[1])
  redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now - keep_ms)
  redis.call('PEXPIRE', KEYS[8], keep_ms)
  redis.call('HSET', KEYS[3], 'origin', ARGV[8])
  keep(keep_ms)
end

drop_lapsed(now)
local limit = effective_limit(now, max_in_flight, slow_max_in_flight)
local woken = wake(now, limit, slow_max_in_flight, lease_ms)

local function granted_reply()
  local reply = {1, limit}
  for _, id in ipairs(woken) do
    if id ~= ARGV[2] then table.insert(reply, id) end
  end
  return reply
end

if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  lease(ARGV[2], ws, now + lease_ms)
  unpark(ARGV[10])
  return granted_reply()
end
-- A newcomer takes a free slot only when its workspace has no attempt waiting here (else it
-- queues behind them); what wake left free is a slot no waiting workspace may take.
local waiting = share_count('p:' .. ws) > 0
if not waiting and may_take(ws, now, limit, slow_max_in_flight, redis.call('ZCARD', KEYS[1])) then
  unpark(ARGV[2])
  unpark(ARGV[10])
  lease(ARGV[2], ws, now + lease_ms)
  return granted_reply()
end

if ARGV[10] == '' then
  -- Parked under this id before (by a dispatcher that parked every attempt): out of the line, or a
  -- slot would be handed to a job that no longer waits for one.
  unpark(ARGV[2])
  local reply = {0, now, share_limit(ws, now, limit, slow_max_in_flight), -1}
  for _, id in ipairs(woken) do table.insert(reply, id) end
  return reply
end

-- A job parked before and run at its fallback time keeps its place in line under its next id.
local place = unpark(ARGV[2]) or redis.call('ZSCORE', KEYS[2], ARGV[10]) or ARGV[5]
park(ARGV[10], ws, place)
keep(keep_ms)
local position = place_in_line(ws, line_member(ws, redis.call('ZSCORE', KEYS[2], ARGV[10]), ARGV[10]))
-- Its workspace is handed about this many slots per lease while it waits: its own cap, or its turn's
-- part of what the waiting workspaces may hold, whichever is fewer.
local own = share_limit(ws, now, limit, slow_max_in_flight)
local waiting_workspaces = math.max(1, redis.call('ZCARD', KEYS[7]))
local per_lease = math.max(1, math.min(own, math.floor((limit - headroom_of(limit)) / waiting_workspaces)))
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local earliest = now
if first[2] then earliest = math.max(now, tonumber(first[2])) end
local reply = {0, earliest + math.floor(position / per_lease) * lease_ms, own, position}
for _, id in ipairs(woken) do table.insert(reply, id) end
return reply
