--[[
  Records a use of an API key, if the key still exists. Check and write in one step: HSET on a
  revoked (deleted) key would bring back a partial record.

  Input:
    KEYS[1] the API key's record (hash)

    ARGV[1] now ms

  Output:
    0
]]
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'last_used_ms', ARGV[1]) end
return 0
