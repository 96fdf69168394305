--[[
  What a listing index remembers of the items removed from it, so that a client paging the list
  (`after` = the last id it saw) can go on after deleting that item: the id keeps its score (its
  creation time, Unix ms) in the index's removed set, `<index>:removed`, which lua/index-page.lua
  reads when the cursor is no longer in the index. Beside it, `<index>:removed-at` holds when each
  was removed. Both are bounded twice: they expire when no item has left for a while, and past the
  cap the earliest removed go, in the order they were removed. (Not the oldest made: a client paging newest first and deleting as it
  goes removes the oldest-made item of all at every step, and its cursor is that item.)
]]

-- Notes `id` as removed from `index` at `now` ms (before it is removed), if it is there.
local function remember_removed(index, removed, removed_at, id, now, keep_ms, cap)
  local score = redis.call('ZSCORE', index, id)
  if not score then return end
  -- Removals in one millisecond keep their order: each is noted a microsecond after the latest when
  -- the clock has not moved on, or the cap would drop those of a millisecond by id, not by order.
  local latest = redis.call('ZRANGE', removed_at, -1, -1, 'WITHSCORES')[2]
  if latest and tonumber(latest) >= now then now = tonumber(latest) + 0.001 end
  redis.call('ZADD', removed, score, id)
  redis.call('ZADD', removed_at, now, id)
  redis.call('PEXPIRE', removed, keep_ms)
  redis.call('PEXPIRE', removed_at, keep_ms)
  local over = redis.call('ZCARD', removed_at) - cap
  if over > 0 then
    local earliest = redis.call('ZRANGE', removed_at, 0, over - 1)
    redis.call('ZREM', removed, unpack(earliest))
    redis.call('ZREMRANGEBYRANK', removed_at, 0, over - 1)
  end
end
