--[[
  Adds a webhook endpoint to its workspace unless the workspace has its most already: the count
  and the write in one step, so two creations at once cannot make an eleventh.

  Input:
    KEYS[1] the workspace's endpoints (hash: id -> record JSON)

    ARGV[1] the endpoint's id
    ARGV[2] its record (JSON)
    ARGV[3] most endpoints a workspace may have

  Output:
    1 added, 0 the workspace has its most already
]]
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
