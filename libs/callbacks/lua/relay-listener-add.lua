--[[
  Registers a relay listener unless its workspace has its most connected already. Listeners whose
  gateway stopped refreshing them (it died without saying goodbye) are dropped first, in the same
  step, so that a crashed gateway's listeners do not hold the workspace's places.

  Input:
    KEYS[1] the workspace's relay listeners (hash: session id -> record JSON with `seen_ms`)

    ARGV[1] the new listener's session id
    ARGV[2] its record (JSON)
    ARGV[3] most listeners a workspace may have
    ARGV[4] now ms
    ARGV[5] how long a listener's last refresh counts (ms)

  Output:
    1 registered, 0 the workspace has its most listeners already
]]
local now = tonumber(ARGV[4])
local live = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local ok, record = pcall(cjson.decode, fields[i + 1])
  if not ok or type(record) ~= 'table' or type(record.seen_ms) ~= 'number' or now - record.seen_ms > tonumber(ARGV[5]) then
    redis.call('HDEL', KEYS[1], fields[i])
  else
    live = live + 1
  end
end
if live >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
