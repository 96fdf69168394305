--[[
  Marks relay listeners as still connected (their gateway's periodic refresh). A listener that was
  removed meanwhile (its connection closed) is not brought back.

  Input:
    KEYS[1] the workspace's relay listeners (hash: session id -> record JSON)

    ARGV[1] now ms
    ARGV[2..] the session ids

  Output:
    how many were refreshed
]]
local refreshed = 0
for i = 2, #ARGV do
  local raw = redis.call('HGET', KEYS[1], ARGV[i])
  if raw then
    local record = cjson.decode(raw)
    record.seen_ms = tonumber(ARGV[1])
    redis.call('HSET', KEYS[1], ARGV[i], cjson.encode(record))
    refreshed = refreshed + 1
  end
end
return refreshed
