--[[
  A destination's slots and its workspaces' shares of them, shared by the scripts that take them,
  give them back and read them. The caller names, before including this:
    KEYS[1] the leases (sorted set: lease id -> deadline ms)
    KEYS[2] the parked attempts (sorted set: delivery job id -> due ms, its place in its workspace's line)
    KEYS[3] the destination's state (hash: origin, slow_until, fast_until, throttle_limit,
            throttle_until, throttle_at)
    KEYS[4] who holds each lease and parked attempt (hash: id -> workspace id)
    KEYS[5] each workspace's share (hash: 'n:<ws>' attempts in flight, 'p:<ws>' attempts parked,
            's:<ws>' its own slow lane's end ms, 'd:<ws>' its last delivered attempt ms,
            'f:<ws>' its last failed attempt ms, 'r:<ws>' its failures since the last delivered one)
    KEYS[6] the workspaces' lines (sorted set, every score 0: '<ws> <due ms, 15 digits> <id>', so a
            workspace's line is one lexicographic range, oldest due first)
    KEYS[7] the workspaces with attempts parked, by turn (sorted set: ws -> slots handed to it while
            waiting): the lowest turn is served first, which is round robin

  The rules (docs/callbacks.md, "Isolation"):
  - at most the cap in force of the destination's attempts are in flight, every workspace together;
  - one workspace alone holds at most the cap less its headroom (a tenth, at least one once the cap
    is two or more), so another workspace's attempt always finds a slot there at once;
  - a workspace whose own attempts there were slow lately holds at most the slow lane's cap, and
    never takes the headroom;
  - the whole host is capped at the slow lane's cap only when its attempts were slow and none
    answered fast lately (a host that answers one workspace fast is up: slowness is the slow
    workspace's own);
  - parked attempts are served one per waiting workspace in turn, each workspace's oldest due first.
]]

-- The headroom of a cap: domain's headroomOf.
local function headroom_of(limit)
  if limit >= 2 then return math.ceil(limit / 10) end
  return 0
end

-- The cap in force at `now`: the base cap, the slow lane's while the whole host is slow, half of what
-- was in force when the destination last pushed back while that lasts; the lowest of those that apply.
local function effective_limit(now, max_in_flight, slow_max_in_flight)
  local state = redis.call('HMGET', KEYS[3], 'slow_until', 'fast_until', 'throttle_limit', 'throttle_until')
  local limit = max_in_flight
  local fast = state[2] and tonumber(state[2]) > now
  if state[1] and tonumber(state[1]) > now and not fast then limit = math.min(limit, slow_max_in_flight) end
  if state[4] and tonumber(state[4]) > now then limit = math.min(limit, tonumber(state[3])) end
  return math.max(1, limit)
end

local function share_count(field)
  return tonumber(redis.call('HGET', KEYS[5], field) or '0')
end

local function add_to_share(field, delta)
  local n = redis.call('HINCRBY', KEYS[5], field, delta)
  if n <= 0 then redis.call('HDEL', KEYS[5], field) end
  return n
end

local function in_own_slow_lane(ws, now)
  local until_ms = redis.call('HGET', KEYS[5], 's:' .. ws)
  return until_ms ~= false and tonumber(until_ms) > now
end

-- How many of a workspace's attempts may be in flight at once now.
local function share_limit(ws, now, limit, slow_max_in_flight)
  local own = limit - headroom_of(limit)
  if in_own_slow_lane(ws, now) then own = math.min(own, slow_max_in_flight) end
  return math.max(1, own)
end

-- Whether a workspace may take one more slot, `total` being taken.
local function may_take(ws, now, limit, slow_max_in_flight, total)
  if total >= limit then return false end
  local own = limit - headroom_of(limit)
  if in_own_slow_lane(ws, now) then
    if total >= own then return false end
    own = math.min(own, slow_max_in_flight)
  end
  return share_count('n:' .. ws) < math.max(1, own)
end

local function line_member(ws, due, id)
  return ws .. ' ' .. string.format('%015.0f', tonumber(due)) .. ' ' .. id
end

-- A lease in `id`'s name, held by `ws`, until `deadline`; a new one counts in the workspace's share.
local function lease(id, ws, deadline)
  if redis.call('ZADD', KEYS[1], deadline, id) == 1 then
    redis.call('HSET', KEYS[4], id, ws)
    add_to_share('n:' .. ws, 1)
  end
end

-- Ends a lease, if it is held; the workspace's share counts one fewer.
local function end_lease(id)
  if redis.call('ZREM', KEYS[1], id) == 0 then return end
  local ws = redis.call('HGET', KEYS[4], id)
  redis.call('HDEL', KEYS[4], id)
  if ws then add_to_share('n:' .. ws, -1) end
end

-- Takes a parked attempt out of its workspace's line, if it is parked; returns its place (due ms) or nil.
local function unpark(id)
  local place = redis.call('ZSCORE', KEYS[2], id)
  if not place then return nil end
  local ws = redis.call('HGET', KEYS[4], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[4], id)
  if ws then
    redis.call('ZREM', KEYS[6], line_member(ws, place, id))
    if add_to_share('p:' .. ws, -1) <= 0 then redis.call('ZREM', KEYS[7], ws) end
  end
  return place
end

-- Puts an attempt in its workspace's line at `place`; a workspace that starts waiting takes the
-- lowest turn of those waiting, so it is served in the current round, not ahead of it.
local function park(id, ws, place)
  if redis.call('ZADD', KEYS[2], 'NX', place, id) == 0 then return end
  redis.call('HSET', KEYS[4], id, ws)
  redis.call('ZADD', KEYS[6], 0, line_member(ws, place, id))
  add_to_share('p:' .. ws, 1)
  if not redis.call('ZSCORE', KEYS[7], ws) then
    local lowest = redis.call('ZRANGE', KEYS[7], 0, 0, 'WITHSCORES')
    redis.call('ZADD', KEYS[7], lowest[2] or 0, ws)
  end
end

-- Where `member` stands in its workspace's line (0 = first).
local function place_in_line(ws, member)
  return redis.call('ZLEXCOUNT', KEYS[6], '[' .. ws .. ' ', '(' .. member)
end

-- Keeps every key of the destination for `keep_ms` more, all together: a count in the shares that
-- outlived the leases it counts would hold a slot for ever. Nothing of it is a record of anything,
-- so all of it goes once the destination has been idle that long.
local function keep(keep_ms)
  for i = 1, 7 do redis.call('PEXPIRE', KEYS[i], keep_ms) end
end

-- keep(), when it is due: the shares have less than half of `keep_ms` left (or no expiry, or are
-- gone), or the leases or their holders were made again since the last keep and have no expiry
-- (the other keys get theirs when they are made: the lines with the park that makes them, the
-- state with the activity note). So a give-back writes no expiry most of the time, while the keys
-- still go together: a destination in use is kept again long before they would go, and one no
-- longer used goes at most `keep_ms` after its last give-back.
local function keep_due(keep_ms)
  if redis.call('PTTL', KEYS[5]) < keep_ms / 2 or redis.call('PTTL', KEYS[1]) == -1 or redis.call('PTTL', KEYS[4]) == -1 then
    keep(keep_ms)
  end
end

-- Frees the slots of attempts whose dispatcher never gave them back (it died mid-attempt).
local function drop_lapsed(now)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do end_lease(id) end
end

-- Hands free slots to parked attempts: one per waiting workspace that may take one, lowest turn
-- first, each workspace's oldest due first, round after round while slots are free. Each is handed
-- a lease reserved in its name (so no newcomer takes the slot while its delayed job is promoted).
-- Returns the ids woken, for the caller to promote.
local function wake(now, limit, slow_max_in_flight, lease_ms)
  local woken = {}
  local total = redis.call('ZCARD', KEYS[1])
  while total < limit do
    local handed = false
    for _, ws in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do
      if total >= limit then break end
      if may_take(ws, now, limit, slow_max_in_flight, total) then
        local head = redis.call('ZRANGEBYLEX', KEYS[6], '[' .. ws .. ' ', '(' .. ws .. '!', 'LIMIT', 0, 1)[1]
        if head then
          local id = string.match(head, '^%S+ %d+ (.+)$')
          unpark(id)
          lease(id, ws, now + lease_ms)
          -- Still waiting: its turn moves on by the slot it was handed.
          if redis.call('ZSCORE', KEYS[7], ws) then redis.call('ZINCRBY', KEYS[7], 1, ws) end
          table.insert(woken, id)
          total = total + 1
          handed = true
        else
          -- A count with no line behind it (cannot happen while the keys live): it waits for nothing.
          redis.call('ZREM', KEYS[7], ws)
          redis.call('HDEL', KEYS[5], 'p:' .. ws)
        end
      end
    end
    if not handed then break end
  end
  return woken
end
