--[[
  Moves a callback between its workspace's state indexes. The indexes move in the same scripts
  that move the state, so a list filtered by status never disagrees with the records.

  The including script names KEYS[3], KEYS[4], KEYS[5]: the workspace's pending, delivered and
  failed indexes (sorted sets: callback id -> created ms).
]]
local function move_state_index(before, cb)
  if before == cb.state then return end
  local index = {pending = KEYS[3], delivered = KEYS[4], failed = KEYS[5]}
  if index[before] then redis.call('ZREM', index[before], cb.id) end
  if index[cb.state] then redis.call('ZADD', index[cb.state], cb.created_ms, cb.id) end
end
