--[[
  Moves a finished job's removal to a later time, in its record (the API's expires_at, where links
  are cut) and in the expiry index alike, unless the record changed since it was read. In one step
  so that the record and the index never disagree.

  Input:
    KEYS[1] the job's record
    KEYS[2] its shard's expiry index (sorted set: job id -> when its retention ends, ms)

    ARGV[1] job id
    ARGV[2] the expires_ms read with the record ('' when it had none)
    ARGV[3] the new record (JSON)
    ARGV[4] the new expires_ms

  Output:
    1 held, 0 unchanged (the record is gone, unreadable or changed meanwhile)
]]
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ok, record = pcall(cjson.decode, raw)
if not ok or type(record) ~= 'table' or tostring(record['expires_ms']) ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[1])
return 1
