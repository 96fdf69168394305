--[[
  Notes the outcome of an attempt to a webhook endpoint, and disables the endpoint when every
  attempt to it has failed for the configured time (WEBHOOK_ENDPOINT_DISABLE_AFTER). A delivered
  attempt ends the failing stretch; the first failure after one starts it.

  Input:
    KEYS[1] the workspace's endpoints (hash: id -> record JSON)

    ARGV[1] the endpoint's id
    ARGV[2] '1' delivered, '0' failed
    ARGV[3] when the attempt was made (Unix ms)
    ARGV[4] what failed (the error class and its detail), for a failed attempt
    ARGV[5] how long an endpoint may fail throughout before it is disabled (ms)

  Output:
    the record (JSON) when this attempt disabled the endpoint, false otherwise (also when the
    endpoint is gone: a callback outlives the endpoint it was made for)
]]
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local endpoint = cjson.decode(raw)
local at = tonumber(ARGV[3])
if ARGV[2] == '1' then
  if endpoint.failing_since_ms ~= cjson.null then
    endpoint.failing_since_ms = cjson.null
    redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(endpoint))
  end
  return false
end
if endpoint.failing_since_ms == cjson.null then endpoint.failing_since_ms = at end
endpoint.last_error = ARGV[4]
endpoint.last_error_ms = at
local disabled = false
if endpoint.enabled and at - endpoint.failing_since_ms >= tonumber(ARGV[5]) then
  endpoint.enabled = false
  endpoint.disabled_reason = 'failing'
  endpoint.updated_ms = at
  disabled = true
end
local stored = cjson.encode(endpoint)
redis.call('HSET', KEYS[1], ARGV[1], stored)
if disabled then return stored end
return false
