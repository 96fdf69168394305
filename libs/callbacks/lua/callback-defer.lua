--[[
  Moves a pending callback's next_attempt_at to when its deferred automatic attempt will be made
  (its destination had no free slot), so what the API and dashboard show stays true. Nothing
  changes if the callback ended meanwhile or the attempt was recorded already.

  Input:
    KEYS[1] the callback's record

    ARGV[1] the automatic attempt (1-6) being deferred
    ARGV[2] when it will be made, ms

  Output:
    1 moved, 0 unchanged
]]
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local cb = cjson.decode(raw)
if cb.state ~= 'pending' or cb.ladder_attempt >= tonumber(ARGV[1]) then return 0 end
cb.next_attempt_ms = tonumber(ARGV[2])
redis.call('SET', KEYS[1], cjson.encode(cb))
return 1
