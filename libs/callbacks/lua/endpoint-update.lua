--[[
  Changes some fields of a webhook endpoint, in one step with reading it, so that a change made by
  a person and one made by delivery (an automatic disabling) never undo each other.

  Input:
    KEYS[1] the workspace's endpoints (hash: id -> record JSON)

    ARGV[1] the endpoint's id
    ARGV[2] the fields to set (JSON object; a JSON null sets the field to null)
    ARGV[3] now ms (its updated_ms)

  Output:
    the record as it now stands (JSON), or false when there is no such endpoint
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local endpoint = cjson.decode(raw)
for field, value in pairs(cjson.decode(ARGV[2])) do endpoint[field] = value end
endpoint.updated_ms = tonumber(ARGV[3])
local stored = cjson.encode(endpoint)
redis.call('HSET', KEYS[1], ARGV[1], stored)
return stored
