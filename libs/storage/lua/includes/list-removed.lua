--[[
  What a listing index remembers of the items removed from it, so that a client paging the list
  (`after` = the last id it saw) can go on after deleting that item: the id keeps its score (its
  creation time, Unix ms) in the index's removed set, `<index>:removed`, which lua/index-page.lua
  reads when the cursor is no longer in the index. The set is bounded twice: it expires when no
  item has left for a while, and past its cap the oldest-made entries go (the ones a client paging
  newest first reaches last).
]]

-- Notes `id` as removed from `index` (before it is removed), if it is there.
local function remember_removed(index, removed, id, keep_ms, cap)
  local score = redis.call('ZSCORE', index, id)
  if not score then return end
  redis.call('ZADD', removed, score, id)
  redis.call('PEXPIRE', removed, keep_ms)
  if redis.call('ZCARD', removed) > cap then redis.call('ZREMRANGEBYRANK', removed, 0, -cap - 1) end
end
